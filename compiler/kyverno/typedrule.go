package kyverno

import (
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/compiler/kyverno/pattern"
	"github.com/admitc/admitc/compiler/kyverno/typed"
	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// A pattern rule is written twice. The exact dynamic translation
// (patternRule) decides as Kyverno does on an object of any shape, and is
// kept as the policy's Dynamic form. The typed translation reads the
// pattern against the schema of the kinds the rule matches and is what is
// emitted: one plain boolean validation, Kyverno's message (with its
// failure path) computed in messageExpression, only when it fails. It
// assumes what the API server guarantees of the objects it admits (their
// shape), which the runtime checks offline before trusting it
// (SchemaReads).

// OfflineSkip is the expression kept for offline tools only that says a
// typed pattern rule skipped (an Enforce rule on an UPDATE whose old object
// violates it too: allowExistingViolations).
const offlineSkipReason = "the old object violates the rule too (allowExistingViolations)"

// typedPatternRule is pol, a lowered pattern rule, written against the
// schema of the kinds its rule matches, with pol as its Dynamic form; nil
// when the pattern or the rule holds what the typed translation does not
// take, or a kind has no known schema.
func (r *reader) typedPatternRule(pol *ir.Policy, c computedRule, m loweredMatch, enforce bool) *ir.Policy {
	v := c.rule.Validation
	if messageReferences(v.Message) {
		return nil
	}
	return r.typedRule(pol, c, named(PatternVariable, PatternBeforeVariable, OutcomeVariable), func(n kubeschema.Node, context []conditions.Variable) (*ir.Policy, error) {
		return typedWith(pol, c, m, enforce, n, context)
	})
}

// typedRule is pol written by with against the schema of its rule's
// kinds (taken together); nil when pol reads params other than its
// rule's configMap entry, holds a variable other than the exact
// translation's own (own says which) and its context entries', a kind has
// no known schema, or with does not take it (a context entry that may fail
// to load, which fails the rule wherever a condition mentions it, among
// what it does not take).
func (r *reader) typedRule(pol *ir.Policy, c computedRule, own func(name string) bool, with func(kubeschema.Node, []conditions.Variable) (*ir.Policy, error)) *ir.Policy {
	foreign := func(v ir.NamedExpression) bool {
		return !own(v.Name) && !strings.HasPrefix(v.Name, ContextVariablePrefix)
	}
	readsConfigMap := pol.From != nil && pol.From.ParamsContext != ""
	if pol.ParamKind != nil && !readsConfigMap || slices.ContainsFunc(pol.Variables, foreign) {
		return nil
	}
	nodes := r.ruleSchemas(c.rule)
	if len(nodes) == 0 {
		return nil
	}
	vars := r.vars
	if !readsConfigMap {
		// No params: a configMap entry the rule does not read stays
		// unread (the typed translation refuses a read of it).
		vars = slices.Clone(vars)
		for i := range vars {
			vars[i].ConfigMap = false
		}
	}
	out, err := with(kubeschema.Intersect(nodes...), vars)
	if err != nil || undeclaredVariable(out) {
		return nil
	}
	return out
}

// variableRef is a CEL read of a policy variable.
var variableRef = regexp.MustCompile(`\bvariables\.([A-Za-z_][A-Za-z0-9_]*)`)

// undeclaredVariable says an expression of pol reads a variable pol does
// not declare (one of the exact form's, left in a message the typed
// translation did not take).
func undeclaredVariable(pol *ir.Policy) bool {
	declared := map[string]bool{}
	for _, v := range pol.Variables {
		declared[v.Name] = true
	}
	var texts []string
	for _, v := range pol.Variables {
		texts = append(texts, v.Expression)
	}
	for _, v := range pol.Validations {
		texts = append(texts, v.Expression, v.MessageExpression)
	}
	for _, a := range append(slices.Clone(pol.AuditAnnotations), pol.OfflineAnnotations...) {
		texts = append(texts, a.ValueExpression)
	}
	for _, t := range texts {
		for _, m := range variableRef.FindAllStringSubmatch(t, -1) {
			if !declared[m[1]] {
				return true
			}
		}
	}
	return false
}

// named says whether a variable's name is one of names.
func named(names ...string) func(string) bool {
	return func(name string) bool { return slices.Contains(names, name) }
}

// typedWith is the typed policy against the schema of the rule's kinds
// (taken together: a rule for Deployments and ReplicationControllers
// assumes of a field only what both guarantee).
func typedWith(pol *ir.Policy, c computedRule, m loweredMatch, enforce bool, n kubeschema.Node, context []conditions.Variable) (*ir.Policy, error) {
	b := celbuild.New()
	t := typed.NewTranslator(b)
	if err := t.SetContext(context); err != nil {
		return nil, err
	}
	t.NameContainerLists()
	v := c.rule.Validation
	texts, err := patternValueTexts(v)
	if err != nil {
		return nil, err
	}
	// Pattern values and the message are read from the request: the old
	// object's pass below matches the pattern as Kyverno substituted it
	// for the request.
	roots := withContextObject(typed.Roots{Object: requestObject(b, pol), Node: n, Operation: operation(b)})
	var values []typed.PatternValue
	if len(texts) > 0 {
		if values, err = t.ReadPatternValues(texts, roots); err != nil {
			return nil, err
		}
	}
	now, err := translateTyped(b, t, v, b.Ident("object"), n)
	if err != nil {
		return nil, err
	}
	valid := b.Not(now.bad)
	out := *pol
	out.Variables, out.AuditAnnotations, out.OfflineAnnotations = nil, nil, nil
	existing := celbuild.Expr(b.Bool(false))
	if enforce && c.rule.HasValidateAllowExistingViolations() {
		before, err := translateTyped(b, t, v, b.Ident("oldObject"), n)
		if err != nil {
			return nil, err
		}
		guard, err := b.Parse(existingViolationGuard(m))
		if err != nil {
			return nil, err
		}
		existing = b.And(guard, before.bad)
		valid = b.Or(valid, existing)
		if once, ok := eitherObjectValid(b, b.Ident("object"), now.bad, before.bad, guard, containerPairs(b, t)); ok {
			valid = once
		}
	}
	skipped := b.Ternary(b.And(now.bad, existing), b.String(offlineSkipReason), b.String(""))
	if now.skip != nil {
		skipped = b.Ternary(now.skip, b.String(now.skipReason()), skipped)
	}
	message, ok := now.messageWith(b, t, roots, c.rule.Name, v.Message)
	if !ok {
		return nil, errors.New("the rule's message")
	}
	// A container list read more than once is a variable, named after
	// what it holds; one read once stays in place.
	for _, l := range t.ContainerLists() {
		with := l.Expr
		if b.Uses(valid, l.Placeholder)+b.Uses(message, l.Placeholder) > 1 {
			with = b.Select(b.Ident("variables"), l.Name)
			out.Variables = append(out.Variables, ir.NamedExpression{Name: l.Name, Expression: b.MustPrint(l.Expr), Origin: pol.Origin})
		}
		valid, skipped, message = b.Substitute(valid, l.Placeholder, with), b.Substitute(skipped, l.Placeholder, with), b.Substitute(message, l.Placeholder, with)
	}
	// The values read before the pattern: the validation tests first
	// that Kyverno reads them as text, which reads them (a failure fails
	// it); a value that is not a field of the request is a variable.
	for i := len(values) - 1; i >= 0; i-- {
		raise, err := b.Parse(pattern.NotRead())
		if err != nil {
			return nil, err
		}
		if values[i].NotPlain != nil {
			valid = b.Ternary(values[i].NotPlain, raise, valid)
		}
	}
	for _, v := range values {
		if v.Name != "" {
			out.Variables = append(out.Variables, ir.NamedExpression{Name: v.Name, Expression: b.MustPrint(v.Expr), Origin: pol.Origin})
		}
	}
	if !celbuild.IsFalse(existing) || now.skip != nil {
		out.OfflineAnnotations = []ir.AuditAnnotation{{Key: SkipAnnotation, ValueExpression: b.MustPrint(skipped), Origin: pol.Origin}}
	}
	out.Validations = []ir.Validation{{
		Expression:        b.MustPrint(valid),
		MessageExpression: b.MustPrint(message),
		Origin:            pol.Validations[0].Origin,
	}}
	if strings.Contains(v.Message, "{{") {
		// Where a variable of the message does not resolve, Kyverno
		// writes its substitution error: the exact form's static message.
		out.Validations[0].Message = pol.Validations[0].Message
		out.Validations[0].MessageExpressionOrigin = pol.Validations[0].MessageExpressionOrigin
	}
	out.SchemaReads = t.Reads()
	dynamic := *pol
	out.Dynamic = &dynamic
	return &out, nil
}

// resolvedPattern is the validation's pattern (or anyPattern) with its $( )
// references resolved.
func resolvedPattern(v *kyvernov1.Validation) (any, error) {
	if p := v.GetPattern(); p != nil {
		return pattern.ResolveReferences(p, "pattern")
	}
	return pattern.ResolveReferences(v.GetAnyPattern(), "anyPattern")
}

// patternValueTexts are the pattern's (or anyPattern's) values with {{ }}
// variables, in the order the exact translation reads them: each pattern's
// keys sorted, after its $( ) references.
func patternValueTexts(v *kyvernov1.Validation) ([]typed.ValueText, error) {
	doc, err := resolvedPattern(v)
	if err != nil {
		return nil, err
	}
	var out []typed.ValueText
	seen := map[string]bool{}
	err = pattern.EachValue(doc, field.NewPath("pattern"), func(text, key string, _ *field.Path) error {
		if !seen[text] {
			seen[text] = true
			out = append(out, typed.ValueText{Text: text, Key: key})
		}
		return nil
	})
	return out, err
}

// typedOutcome is a pattern's or an anyPattern's translation over one
// root: bad when the rule fails, skip when it skips (nil: never).
type typedOutcome struct {
	bad    celbuild.Expr
	skip   celbuild.Expr
	checks []typed.Check
	any    bool
}

func translateTyped(b *celbuild.Builder, t *typed.Translator, v *kyvernov1.Validation, root celbuild.Expr, n kubeschema.Node) (typedOutcome, error) {
	return translateTypedAt(b, t, v, typed.Root{Expr: root, Node: n})
}

// translateTypedAt is translateTyped over a value of the object (a
// foreach element), its reads recorded at the value's schema paths.
func translateTypedAt(b *celbuild.Builder, t *typed.Translator, v *kyvernov1.Validation, root typed.Root) (typedOutcome, error) {
	if p := v.GetPattern(); p != nil {
		// A $( ) reference names a place of the pattern itself.
		p, err := pattern.ResolveReferences(p, "pattern")
		if err != nil {
			return typedOutcome{}, err
		}
		c, err := t.PatternAt(p, root)
		if err != nil {
			return typedOutcome{}, err
		}
		return typedOutcome{bad: c.Bad, skip: c.Skip, checks: []typed.Check{c}}, nil
	}
	ps, _ := v.GetAnyPattern().([]any)
	if len(ps) == 0 {
		return typedOutcome{}, errors.New("an empty anyPattern")
	}
	resolved, err := pattern.ResolveReferences(ps, "anyPattern")
	if err != nil {
		return typedOutcome{}, err
	}
	ps, _ = resolved.([]any)
	out := typedOutcome{any: true}
	var oks, skips []celbuild.Expr
	for _, p := range ps {
		c, err := t.PatternAt(p, root)
		if err != nil {
			return typedOutcome{}, err
		}
		out.checks = append(out.checks, c)
		oks = append(oks, c.OK)
		skips = append(skips, c.Skip)
	}
	// One pattern passes: pass; every one skips: skip; else fail.
	if slices.ContainsFunc(skips, func(e celbuild.Expr) bool { return e == nil }) {
		out.bad = b.Not(b.Or(oks...))
		return out, nil
	}
	out.skip = b.And(skips...)
	out.bad = b.Not(b.Or(b.Or(oks...), out.skip))
	return out, nil
}

// skipReason says why Kyverno skipped the rule.
func (o typedOutcome) skipReason() string {
	if o.any {
		return "every anyPattern skipped (a conditional or global anchor not satisfied)"
	}
	return "a conditional or global anchor is not satisfied"
}

// message is Kyverno's violation message (buildErrorMessage): for a
// pattern "validation error: MESSAGE. rule RULE failed at path PATH", for
// an anyPattern each failed pattern's "rule RULE[i] failed at path PATH".
func (o typedOutcome) message(b *celbuild.Builder, rule, message string) celbuild.Expr {
	prefix := "validation error: "
	if message != "" {
		if !strings.HasSuffix(message, ".") {
			message += "."
		}
		prefix += message + " "
	}
	return o.messageAfter(b, rule, b.String(strings.TrimSuffix(prefix, " ")))
}

// messageWith is message for a message with {{ }} variables, as t
// substitutes them on roots; false when it holds what the typed
// translation does not take.
func (o typedOutcome) messageWith(b *celbuild.Builder, t *typed.Translator, roots typed.Roots, rule, message string) (celbuild.Expr, bool) {
	if !strings.Contains(message, "{{") {
		return o.message(b, rule, message), true
	}
	if messageReferences(message) || strings.HasSuffix(strings.TrimSpace(message), "}}") {
		// Whether Kyverno adds the period depends on the value.
		return nil, false
	}
	if !strings.HasSuffix(message, ".") {
		message += "."
	}
	m, err := t.Message(message, roots)
	if err != nil {
		return nil, false
	}
	return o.messageAfter(b, rule, b.Add(b.String("validation error: "), m)), true
}

// messageAfter is the message after its head ("validation error:" and
// the rule's message).
func (o typedOutcome) messageAfter(b *celbuild.Builder, rule string, head celbuild.Expr) celbuild.Expr {
	if !o.any {
		return b.Add(b.Add(head, b.String(" rule "+rule+" failed at path ")), o.checks[0].Path)
	}
	var out celbuild.Expr
	for i, c := range o.checks {
		part := b.Add(b.String(" rule "+rule+"["+strconv.Itoa(i)+"] failed at path "), c.Path)
		if c.Skip != nil {
			part = b.Ternary(c.Bad, part, b.String(""))
		}
		if out == nil {
			out = part
		} else {
			out = b.Add(out, part)
		}
	}
	return b.Add(head, out)
}

// ruleSchemas are the schemas of the kinds a rule matches: every kind of
// its match filters, each a built-in kind or a CRD's, in every version the
// rule matches (a CRD's served versions, or the one the kind names); a
// wildcard, a kind that does not resolve or a version without a schema
// gives none.
func (r *reader) ruleSchemas(rule kyvernov1.Rule) []kubeschema.Node {
	var out []kubeschema.Node
	for _, f := range filters(&rule.MatchResources) {
		if len(f.Kinds) == 0 {
			return nil
		}
		for _, k := range f.Kinds {
			g, ver, kind, _ := parseKindSelector(k)
			if hasWildcard(kind) || hasWildcard(ver) && ver != "*" || hasWildcard(g) && g != "*" {
				return nil
			}
			res := r.kinds.Resources(g, kind)
			if len(res) == 0 {
				return nil
			}
			for _, s := range res {
				version := s.Version
				if ver != "*" {
					version = ver
				}
				n, ok := r.kinds.Schema(schema.GroupVersionKind{Group: s.Group, Version: version, Kind: kind})
				if !ok {
					return nil
				}
				out = append(out, n)
			}
		}
	}
	return out
}
