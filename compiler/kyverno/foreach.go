package kyverno

import (
	"fmt"
	"strconv"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/compiler/kyverno/pattern"
	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/ir"
)

// A validate.foreach rule, lowered as Kyverno's validator runs it
// (validate_resource.go validateForEach and validateElements):
//
//   - each entry's list is a JMESPath query (a key it cannot resolve skips
//     the entry; request.object is null on DELETE, as the query is not a
//     {{ }} substitution); a value that is not a list is a list of one, and
//     null elements are skipped;
//   - each element is put in the context (element, elementIndex, elementN,
//     elementIndexN) and is the pattern's scope when it is a map (or as
//     elementScope says; elementScope true on another value is an error);
//   - the entry's preconditions skip the element when they do not hold or
//     fail to evaluate; then its deny, pattern, anyPattern or nested
//     foreach decides: pass counts the element, a pattern's skip and an
//     empty nested foreach do not;
//   - the first element that fails or errs, in entry and element order,
//     is the rule's response ("validation failure: " and the element's
//     message); else pass when an element counted, else no response.
//
// Each result is a CEL string: 'pass', 'none' (nothing counted), or
// "fail\t<entry>\t<element>\t<message>" (or error). Elements are
// evaluated in order: when the entry's checks can raise an evaluation
// error (deny conditions), an element is evaluated only if no element
// before it failed, so an error is raised exactly when Kyverno's first
// non-passing element is that error. The first failure is found with
// indexOf: an equal result earlier in the list would fail first.

const (
	// ForEachVariable names the variable holding a foreach rule's result.
	ForEachVariable = "kyvernoForEach"
	// ForEachBeforeVariable names the variable holding the result on the
	// old object of an UPDATE, for Enforce rules that allow existing
	// violations ('none' when Kyverno does not look at the old object).
	ForEachBeforeVariable = "kyvernoForEachBefore"
	// FailuresVariable holds, in the typed translation of a foreach rule
	// whose elements may fail evaluation, the outcome of each element that
	// does not pass ('fail', or Kyverno's error where it errs), in
	// Kyverno's order: the first decides. OldFailuresVariable is the same on the old object.
	FailuresVariable    = "failures"
	OldFailuresVariable = "oldFailures"
	// ListVariable prefixes the variables holding each foreach entry's
	// list (kyvernoList0, kyvernoList1, ...).
	ListVariable = "kyvernoList"
	// EntryVariable prefixes the variables holding each top-level foreach
	// entry's result (kyvernoEntry0, ...), and BeforeEntryVariable their
	// results on the old object: one expression per entry keeps each
	// expression's size, and its type checking, to one entry's. Variables
	// are evaluated when first read, so an entry after a failing one is
	// never evaluated, as in Kyverno.
	EntryVariable       = "kyvernoEntry"
	BeforeEntryVariable = "kyvernoEntryBefore"
	// NoResponseAnnotation is the audit annotation a foreach rule
	// publishes when no element was validated: Kyverno's engine gives the
	// rule no response (admission proceeds, as on pass).
	NoResponseAnnotation = "kyverno-no-response"
)

// foreachLowering holds what one foreach rule's lowering shares.
type foreachLowering struct {
	r       *reader
	rule    string
	message string
	// deferred says the message has {{ }} variables: an element's failure
	// carries its pattern result only, and the validation's message
	// expression substitutes the variables for the failing element.
	deferred bool
	fresh    int
	// lists are the top-level entries' list expressions.
	lists []string
	// shared are the variables holding top-level entries' results.
	shared []ir.NamedExpression
}

// loopContext is where an entry is lowered: the conditions scope (with
// the enclosing loops), and the pattern target of the enclosing loop (a
// CEL expression, null for the resource).
type loopContext struct {
	scope  conditions.Scope
	target string
	// resource is the resource a pattern reads when no element is its
	// scope; onDelete says Kyverno gives no response then on DELETE.
	resource string
	onDelete bool
}

// foreachRule fills pol with the variables, validation and audit
// annotations of the foreach rule at path, or says why it cannot.
func (r *reader) foreachRule(pol *ir.Policy, c computedRule, path string, m loweredMatch, enforce bool) *refusal {
	v := c.rule.Validation
	vp := path + ".validate.foreach"
	if f := depthRefusal(v.ForEachValidation, vp); f != nil {
		return f
	}
	l := &foreachLowering{r: r, rule: c.rule.Name, message: v.Message, deferred: strings.Contains(v.Message, "{{")}
	if l.deferred && nested(v.ForEachValidation) {
		return &refusal{"validate.message variables", path + ".validate.message", "{{ }} variables in the message of a rule with a nested foreach are not translated: write the message without them, or keep this rule under Kyverno"}
	}
	res, f := l.entries(v.ForEachValidation, vp, loopContext{scope: r.validationScope(conditions.Scope{}), target: "null", resource: "object", onDelete: true}, true, EntryVariable)
	if f != nil {
		return f
	}
	for i, e := range l.lists {
		pol.Variables = append(pol.Variables, ir.NamedExpression{Name: ListVariable + strconv.Itoa(i), Expression: e, Origin: r.origin(fmt.Sprintf("%s[%d].list", vp, i))})
	}
	pol.Variables = append(pol.Variables, l.shared...)
	l.shared = nil
	pol.Variables = append(pol.Variables, ir.NamedExpression{Name: ForEachVariable, Expression: res, Origin: r.origin(vp)})
	ref := "variables." + ForEachVariable
	outcome := ref + ".split('\\t')[0]"
	if enforce && c.rule.HasValidateAllowExistingViolations() {
		before, f := l.beforeResult(c, path, m)
		if f != nil {
			return f
		}
		pol.Variables = append(append(pol.Variables, l.shared...), ir.NamedExpression{Name: ForEachBeforeVariable, Expression: before, Origin: r.origin(vp)})
		outcome = ref + ".startsWith('fail') && variables." + ForEachBeforeVariable + ".startsWith('fail') ? 'skip' : " + outcome
	}
	pol.Variables = append(pol.Variables, ir.NamedExpression{Name: OutcomeVariable, Expression: outcome, Origin: r.origin(vp)})
	out := "variables." + OutcomeVariable
	val := ir.Validation{Expression: out + " == 'error' ? {}['validation failure: ' + " + ref + ".split('\\t', 4)[3]] : " + out + " != 'fail'", Origin: r.origin(vp)}
	if f := l.validationMessage(&val, v, path); f != nil {
		return f
	}
	pol.Validations = []ir.Validation{val}
	pol.AuditAnnotations = []ir.AuditAnnotation{
		{Key: SkipAnnotation, ValueExpression: out + " == 'skip' ? 'the old object violates the rule too (allowExistingViolations)' : ''", Origin: r.origin(vp)},
		{Key: NoResponseAnnotation, ValueExpression: out + " == 'none' ? 'no element of the foreach lists was validated' : ''", Origin: r.origin(vp)},
	}
	return nil
}

// beforeResult is the rule's result on the old object, as Kyverno's
// validateOldObject computes it (the old object created, its match and
// preconditions holding), 'none' otherwise.
func (l *foreachLowering) beforeResult(c computedRule, path string, m loweredMatch) (string, *refusal) {
	saved := l.lists
	l.lists = nil
	ctx := loopContext{scope: l.r.scope(oldObjectScope), target: "null", resource: "oldObject"}
	before, f := l.entries(c.rule.Validation.ForEachValidation, path+".validate.foreach", ctx, false, BeforeEntryVariable)
	l.lists = saved
	if f != nil {
		return "", f
	}
	pre := "true"
	if c.rule.RawAnyAllConditions != nil {
		pre, f = l.r.preconditions(c, path, l.r.scope(oldObjectScope))
		if f != nil {
			return "", f
		}
	}
	return existingViolationGuard(m) + " && (" + pre + ") ? (" + before + ") : 'none'", nil
}

// nested says whether an entry has a nested foreach.
func nested(fes []kyvernov1.ForEachValidation) bool {
	for _, fe := range fes {
		if len(fe.GetForEachValidation()) > 0 {
			return true
		}
	}
	return false
}

func (l *foreachLowering) name(prefix string) string {
	l.fresh++
	return prefix + strconv.Itoa(l.fresh)
}

// bindCEL evaluates body with name bound to value once.
func bindCEL(name, value, body string) string {
	return "[" + value + "].map(" + name + ", " + body + ")[0]"
}

// bad is a CEL test of the result named r for fail or error.
func bad(r string) string {
	return "(" + r + ".startsWith('fail') || " + r + ".startsWith('error'))"
}

// entries lowers the foreach entries fes at path into the CEL result of
// Kyverno's validateForEach: the first entry that fails or errs, else
// pass when one counted an element, else 'none'. top says the entries are
// the rule's object's own, whose lists become variables; a shared prefix
// makes each entry's result a variable of that prefix (in l.shared).
func (l *foreachLowering) entries(fes []kyvernov1.ForEachValidation, path string, ctx loopContext, top bool, shared string) (string, *refusal) {
	var results []string
	size := 0
	for i := range fes {
		ep := fmt.Sprintf("%s[%d]", path, i)
		res, f := l.entry(&fes[i], i, ep, ctx, top)
		if f != nil {
			return "", f
		}
		if f := lengthRefusal(len(res), "validate.foreach", ep); f != nil {
			return "", f
		}
		if shared != "" {
			name := shared + strconv.Itoa(i)
			l.shared = append(l.shared, ir.NamedExpression{Name: name, Expression: res, Origin: l.r.origin(ep)})
			res = "variables." + name
		}
		results = append(results, res)
		size += len(res)
		if f := lengthRefusal(size, "validate.foreach", path); f != nil {
			return "", f
		}
	}
	if shared != "" {
		return firstBad(results, path)
	}
	out := "'none'"
	for k := len(results) - 1; k >= 0; k-- {
		rk, rest := l.name("rk"), l.name("rr")
		if out == "'none'" {
			out = results[k]
			continue
		}
		out = bindCEL(rk, results[k], bad(rk)+" ? "+rk+" : "+bindCEL(rest, out, bad(rest)+" ? "+rest+" : "+rk+" == 'pass' || "+rest+" == 'pass' ? 'pass' : 'none'"))
		if f := lengthRefusal(len(out), "validate.foreach", path); f != nil {
			return "", f
		}
	}
	return out, nil
}

// firstBad combines the results of entries held in variables (refs) as
// entries does: the first that fails or errs, else pass when one passed,
// else 'none'. A chain of conditionals over the variables is linear in
// their number, and has no list or comprehension for the type checker to
// solve (binding each result, as entries must inside a loop, makes type
// checking grow with the square of the entries). A variable is evaluated
// when first read, so an entry after a failing one is never evaluated.
func firstBad(refs []string, path string) (string, *refusal) {
	if len(refs) == 1 {
		return refs[0], nil
	}
	var b strings.Builder
	for _, r := range refs {
		b.WriteString(bad(r) + " ? " + r + " : ")
	}
	passed := make([]string, len(refs))
	for i, r := range refs {
		passed[i] = r + " == 'pass'"
	}
	b.WriteString("(" + strings.Join(passed, " || ") + ") ? 'pass' : 'none'")
	if f := lengthRefusal(b.Len(), "validate.foreach", path); f != nil {
		return "", f
	}
	return b.String(), nil
}

// entry lowers one foreach entry (the k-th) into its result.
func (l *foreachLowering) entry(fe *kyvernov1.ForEachValidation, k int, path string, ctx loopContext, top bool) (string, *refusal) {
	list, f := l.entryList(fe, path, ctx)
	if f != nil {
		return "", f
	}
	if top {
		l.lists = append(l.lists, list)
		list = "variables." + ListVariable + strconv.Itoa(k)
	}
	elems := l.name("ls")
	e, i := l.name("el"), l.name("ix")
	body, raises, f := l.element(fe, path, ctx, e, i)
	if f != nil {
		return "", f
	}
	outcomes := elems + ".transformList(" + i + ", " + e + ", " + body + ")"
	if raises {
		j, x := l.name("ij"), l.name("ex")
		earlier, f := l.elementFails(fe, path, ctx, x, j)
		if f != nil {
			return "", f
		}
		outcomes = elems + ".transformList(" + i + ", " + e + ", " + elems + ".exists(" + j + ", " + x + ", " + j + " < " + i + " && " + earlier + ") ? 'pass' : " + body + ")"
	}
	os, b := l.name("os"), l.name("bo")
	first := b + "[0]"
	result := bindCEL(b, os+".filter(x, "+bad("x")+")",
		"size("+b+") > 0 ? "+first+".split('\\t', 2)[0] + '\\t"+strconv.Itoa(k)+"\\t' + string("+os+".indexOf("+first+")) + '\\t' + "+first+".split('\\t', 2)[1] : "+os+".exists(x, x == 'pass') ? 'pass' : 'none'")
	return bindCEL(elems, "dyn("+list+")", conditions.IsUnknownKey(elems)+" ? 'none' : "+
		bindCEL(elems, "type("+elems+") == list ? "+elems+" : ["+elems+"]", bindCEL(os, outcomes, result))), nil
}

// entryList is the CEL query of the entry's list, or why it cannot be
// lowered.
func (l *foreachLowering) entryList(fe *kyvernov1.ForEachValidation, path string, ctx loopContext) (string, *refusal) {
	if len(fe.Context) > 0 {
		return "", &refusal{contextFeature(fe.Context[0]), path + ".context", "a foreach entry's context is loaded by Kyverno at admission for each element; an admission policy cannot load it: move the entry to the rule's context if it does not read the element, or keep this rule under Kyverno"}
	}
	if fe.List == "" {
		return "", &refusal{"validate.foreach", path + ".list", "a foreach entry needs a list: give it one"}
	}
	s := ctx.scope
	s.Capture = true
	// Kyverno queries the list without its {{ }} substitution, which
	// alone reads request.object as the old object on DELETE.
	s.Raw = true
	fresh := l.fresh
	list, err := conditions.Query(fe.List, s, &fresh)
	l.fresh = fresh
	if err != nil {
		return "", &refusal{"validate.foreach list", path + ".list", err.Error()}
	}
	return list, nil
}

// element lowers the outcome of one element (the CEL names e and i) of
// the entry fe: 'pass', 'none', "fail\t<message>" or "error\t<message>";
// raises says its checks can raise an evaluation error.
func (l *foreachLowering) element(fe *kyvernov1.ForEachValidation, path string, ctx loopContext, e, i string) (string, bool, *refusal) {
	inner := elementContext(fe, ctx, e, i)
	body, raises, f := l.check(fe, path, inner)
	if f != nil {
		return "", false, f
	}
	pre, f := l.precondition(fe, path, inner)
	if f != nil {
		return "", false, f
	}
	if pre != "" {
		body = "(" + pre + ") != 'true' ? 'none' : " + body
	}
	if fe.ElementScope != nil && *fe.ElementScope {
		body = "type(" + e + ") != map ? 'error\\tfailed to process foreach: cannot use elementScope=true foreach rules for elements that are not maps, expected type=map got type=' + " + goTypeName(e) + " : " + body
	}
	return e + " == null ? 'none' : " + body, raises, nil
}

// elementContext is where the entry fe's checks on its element (the CEL
// names e and i) are lowered: the element and its index in the conditions
// scope, and the element as the pattern target when it is the scope.
func elementContext(fe *kyvernov1.ForEachValidation, ctx loopContext, e, i string) loopContext {
	inner := ctx
	inner.scope.Element, inner.scope.ElementIndex = e, "double("+i+")"
	inner.scope.Loops = append(append([]conditions.Loop(nil), ctx.scope.Loops...), conditions.Loop{Element: e, Index: "double(" + i + ")"})
	scoped := "type(" + e + ") == map"
	if fe.ElementScope != nil {
		scoped = strconv.FormatBool(*fe.ElementScope)
	}
	inner.target = "(" + scoped + " ? " + e + " : " + ctx.target + ")"
	return inner
}

// precondition is the outcome of the entry's preconditions on the element
// of ctx ('true' lets the element be validated), or "" when it has none.
func (l *foreachLowering) precondition(fe *kyvernov1.ForEachValidation, path string, ctx loopContext) (string, *refusal) {
	if fe.AnyAllConditions == nil {
		return "", nil
	}
	fresh := l.fresh
	pre, err := conditions.Outcome(*fe.AnyAllConditions, ctx.scope, &fresh)
	l.fresh = fresh
	if err != nil {
		return "", l.r.conditionRefusal("foreach preconditions", path+".preconditions", err)
	}
	return pre, nil
}

// goTypeName is the Go type Kyverno names for the JSON value named v.
func goTypeName(v string) string {
	return "(type(" + v + ") == string ? 'string' : type(" + v + ") == bool ? 'bool' : type(" + v + ") == list ? '[]interface {}' : 'float64')"
}

// check lowers the entry's deny, pattern, anyPattern or nested foreach on
// the element, in the order Kyverno's validator tries them.
func (l *foreachLowering) check(fe *kyvernov1.ForEachValidation, path string, ctx loopContext) (string, bool, *refusal) {
	switch {
	case fe.Deny != nil:
		return l.deny(fe.Deny, path+".deny", ctx)
	case fe.GetPattern() != nil || fe.GetAnyPattern() != nil:
		// A pattern raises where a {{ }} value does not resolve.
		s, f := l.pattern(fe, path, ctx)
		return s, patternValues(fe), f
	case len(fe.GetForEachValidation()) > 0:
		res, f := l.entries(fe.GetForEachValidation(), path+".foreach", ctx, false, "")
		if f != nil {
			return "", false, f
		}
		n := l.name("nf")
		return bindCEL(n, res, bad(n)+" ? "+n+".split('\\t')[0] + '\\tvalidation failure: ' + "+n+".split('\\t', 4)[3] : "+n), true, nil
	}
	return "'none'", false, nil
}

// patternValues says the entry's pattern or anyPattern has {{ }} values.
func patternValues(fe *kyvernov1.ForEachValidation) bool {
	return pattern.HasValues([]any{fe.GetPattern(), fe.GetAnyPattern()})
}

// deny is a foreach deny block on the element: its conditions raise an
// evaluation error as Kyverno's deny check fails.
func (l *foreachLowering) deny(d *kyvernov1.Deny, vp string, ctx loopContext) (string, bool, *refusal) {
	fresh := l.fresh
	defer func() { l.fresh = fresh }()
	conds, err := conditions.Decode(d.GetAnyAllConditions())
	if err != nil {
		return "", false, l.r.conditionRefusal("validate.deny", vp+".conditions", err)
	}
	e, err := conditions.Conditions(conds, ctx.scope, &fresh)
	if err != nil {
		return "", false, l.r.conditionRefusal("validate.deny", vp+".conditions", err)
	}
	// Kyverno's getDenyMessage: the rule's message and the messages of
	// the conditions that held.
	held := conditions.HeldMessages(conds, conditions.IsList(d.GetAnyAllConditions()))
	if conditions.HasMessages(conds) {
		if l.deferred {
			return "", false, &refusal{"condition message", vp + ".conditions", "condition messages in a foreach deny whose rule message has {{ }} variables are not translated: drop one of them, or keep this rule under Kyverno"}
		}
		if strings.Contains(strings.Join(held, ""), "{{") {
			return "", false, &refusal{"condition message", vp + ".conditions", "{{ }} variables in the condition messages of a foreach deny are not translated: move them to validate.message, or keep this rule under Kyverno"}
		}
	}
	msgs := conditions.DenyMessages(l.message, l.rule, held)
	if l.deferred {
		msgs = []string{""}
	}
	failed := celenv.Quote("fail\t" + msgs[0])
	if len(msgs) > 1 {
		first, err := conditions.FirstHolding(conds, ctx.scope, &fresh)
		if err != nil {
			return "", false, l.r.conditionRefusal("validate.deny", vp+".conditions", err)
		}
		for i := range msgs {
			msgs[i] = "fail\t" + msgs[i]
		}
		failed = conditions.Choose(first, msgs)
	}
	return "(" + e + ") ? " + failed + " : 'pass'", true, nil
}

// pattern is a foreach pattern or anyPattern on the element (when it is
// the scope) or on the enclosing scope: pass counts, skip does not.
func (l *foreachLowering) pattern(fe *kyvernov1.ForEachValidation, path string, ctx loopContext) (string, *refusal) {
	tg := l.name("tg")
	var e pattern.Expr
	var err error
	// Kyverno substitutes the entry's pattern for each element, from the
	// element's context (the values' names are bound inside the pattern).
	fresh := l.fresh
	resolve := func(text string) (string, error) { return conditions.Value(text, ctx.scope, &fresh) }
	if p := fe.GetPattern(); p != nil {
		e, err = pattern.TranslateWith(p, tg, resolve)
	} else {
		ps, _ := fe.GetAnyPattern().([]any)
		e, err = pattern.TranslateAnyWith(ps, tg, resolve)
	}
	if err != nil {
		return "", l.r.patternRefusal(path, err, false)
	}
	pr := l.name("pr")
	failed := "'fail\\t' + " + e.Message(pr, l.rule, l.message)
	if l.deferred {
		failed = "'fail\\t' + " + pr
	}
	errored := "'error\\tvalidation error: rule " + l.rule + " execution error: a conditional or existence anchor key is missing at ' + " + pr + ".substring(6)"
	outcome := bindCEL(pr, e.Result, pr+" == 'pass' ? 'pass' : "+pr+" == 'skip' ? 'none' : "+pr+".startsWith('error') ? "+errored+" : "+failed)
	target := bindCEL(tg, ctx.target+" != null ? "+ctx.target+" : "+ctx.resource, outcome)
	if ctx.onDelete {
		return ctx.target + " == null && request.operation == 'DELETE' ? 'none' : " + target, nil
	}
	return target, nil
}

// validationMessage sets the message of a failed foreach rule: the failing
// element's message after "validation failure: ", with the rule message's
// {{ }} variables substituted in that element's context (a variable that
// does not resolve leaves the static fallback, and the decision, as
// Kyverno's message substitution does).
func (l *foreachLowering) validationMessage(val *ir.Validation, v *kyvernov1.Validation, path string) *refusal {
	ref := "variables." + ForEachVariable
	val.MessageExpression = "'validation failure: ' + " + ref + ".split('\\t', 4)[3]"
	if !l.deferred {
		return nil
	}
	mo := l.r.origin(path + ".validate.message")
	val.MessageExpressionOrigin = &mo
	parts := ref + ".split('\\t', 4)"
	expr := "''"
	allDeny := true
	for k := len(v.ForEachValidation) - 1; k >= 0; k-- {
		m, deny, f := l.entryMessage(&v.ForEachValidation[k], k, parts, path)
		if f != nil {
			return f
		}
		allDeny = allDeny && deny
		expr = "int(" + parts + "[1]) == " + strconv.Itoa(k) + " ? " + m + " : " + expr
	}
	val.MessageExpression = expr
	val.Message = "validation failure: validation error: variables substitution error in rule " + l.rule
	if allDeny {
		val.Message = "validation failure: "
	}
	return nil
}

// entryMessage is the message expression of a failure of the k-th entry,
// from the failure's parts (status, entry, element, detail).
func (l *foreachLowering) entryMessage(fe *kyvernov1.ForEachValidation, k int, parts, path string) (string, bool, *refusal) {
	list := "variables." + ListVariable + strconv.Itoa(k)
	el, ix := l.name("mel"), l.name("mix")
	s := l.r.validationScope(conditions.Scope{Element: el, ElementIndex: "double(" + ix + ")", Loops: []conditions.Loop{{Element: el, Index: "double(" + ix + ")"}}})
	fresh := l.fresh
	m, err := conditions.Message(l.message, s, &fresh)
	l.fresh = fresh
	if err != nil {
		return "", false, &refusal{"validate.message variables", path + ".validate.message", err.Error()}
	}
	body := "'validation failure: ' + " + m
	deny := fe.Deny != nil
	if !deny {
		e := pattern.Expr{Any: fe.GetPattern() == nil}
		mm := l.name("mm")
		body = bindCEL(mm, m, "'validation failure: validation error: ' + ("+mm+".endsWith('.') ? "+mm+" : "+mm+" + '.') + ' ' + ("+e.Message(parts+"[3]", l.rule, "")+").substring(18)")
	}
	return bindCEL(ix, "int("+parts+"[2])", bindCEL(el, bindCEL("ml", "dyn("+list+")", "type(ml) == list ? ml : [ml]")+"["+ix+"]", body)), deny, nil
}
