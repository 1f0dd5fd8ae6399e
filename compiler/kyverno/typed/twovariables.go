package typed

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// A condition between two fields that the schema says are resource
// quantities, such as the published "memory requests equal limits" rule
//
//	key: "{{ element.resources.requests.memory }}"
//	operator: NotEquals
//	value: "{{ element.resources.limits.memory || '' }}"
//
// is written as a person writes it:
//
//	quantity(c.resources.requests.memory).compareTo(quantity(c.resources.limits.memory)) != 0
//
// Kyverno's operators try durations first, then quantities, then text;
// on two quantities (the API server parses them when it decodes the
// object, and offline the runtime's shape check sends an object whose
// field does not parse to the exact form: ir.FormatQuantity) that is the
// comparison of the quantities, which quantitiesAgree checks against the exact
// operator on pairs of quantities. Where a field is missing, Kyverno
// compares its default (or null): the exact operator decides that side
// the same way for every quantity on the other, or the condition keeps
// its exact form.

// quantityProbes are quantities the comparison is checked on: units,
// exponents, milli values that are durations too, equal values written
// differently.
var quantityProbes = []any{"0", "1", "2", "-1", "0.5", "1.5", "1m", "5m", "60m", "100m", "500m", "1n", "100u",
	"1k", "1000", "1e3", "1Ki", "1024", "1G", "1000M", "1Gi", "1024Mi", "1536Mi", "1.5Gi", "128974848", "129e6", "2Gi"}

// comparisons are the operators between two quantities, as CEL's.
var comparisons = map[string]string{"equal": "==", "equals": "==", "notequal": "!=", "notequals": "!=",
	"greaterthan": ">", "greaterthanorequals": ">=", "lessthan": "<", "lessthanorequals": "<="}

// variablesCondition is a condition whose key and value are each one {{ }}
// variable: two quantity fields compared, or two lists of names.
func (t *Translator) variablesCondition(c kyvernov1.Condition, roots Roots, names map[string]bool) (celbuild.Expr, bool, error) {
	switch strings.ToLower(string(c.Operator)) {
	case "anyin", "allin", "anynotin", "allnotin":
		return t.listsCondition(c, roots, names)
	}
	return t.quantitiesCondition(c, roots, names)
}

// keyAndValue are the values of a condition's key and value, each one
// {{ }} variable.
func (t *Translator) keyAndValue(c kyvernov1.Condition, roots Roots, names map[string]bool, nullData bool) ([2]qval, error) {
	var out [2]qval
	for i, raw := range []string{c.GetKey().(string), c.GetValue().(string)} {
		q, ok := wholeVariable(ElementName(raw, roots))
		if !ok {
			return out, notTyped("a value with {{ }} variables that is not one variable")
		}
		t.nullData = nullData && i == 1
		v, err := t.query(q, roots, names)
		t.nullData = false
		if err != nil {
			return out, err
		}
		out[i] = v
	}
	return out, nil
}

func (t *Translator) quantitiesCondition(c kyvernov1.Condition, roots Roots, names map[string]bool) (celbuild.Expr, bool, error) {
	op := strings.ToLower(string(c.Operator))
	cmp, ok := comparisons[op]
	if !ok {
		return nil, false, notTyped("the %s operator between two {{ }} variables", c.Operator)
	}
	vals, err := t.keyAndValue(c, roots, names, false)
	if err != nil {
		return nil, false, err
	}
	var paths [2]*qpath
	for i, v := range vals {
		if v.kind != qPath || v.path.shape() != kubeschema.String || !v.path.final().Quantity() {
			return nil, false, notTyped("a comparison of two {{ }} variables that are not both quantity fields")
		}
		paths[i] = v.path
	}
	exact, err := conditions.Operator(op, "x", "y", "{{ x }}", "{{ y }}")
	if err != nil {
		return nil, false, notTyped("%v", err)
	}
	pred := "quantity(x).compareTo(quantity(y)) " + cmp + " 0"
	if cmp == "==" || cmp == "!=" {
		// Two quantities are equal where they compare as 0.
		pred = "quantity(x) " + cmp + " quantity(y)"
	}
	ex, err := pairProgram(exact)
	if err != nil {
		return nil, false, notTyped("the exact operator: %v", err)
	}
	ty, err := pairProgram(pred)
	if err != nil {
		return nil, false, notTyped("the typed comparison %s: %v", pred, err)
	}
	if err := quantitiesAgree(exact, pred, ex, ty); err != nil {
		return nil, false, err
	}
	// absent is what Kyverno compares where a field is missing.
	absent := func(p *qpath) any {
		if p.hasDflt {
			return p.dflt
		}
		return nil
	}
	// constant is the exact operator with x and y, each a value or
	// quantity probes ([]any), the same on every probe.
	constant := func(xs, ys []any) (celbuild.Expr, error) {
		var first *bool
		for _, x := range xs {
			for _, y := range ys {
				got, err := ex(x, y)
				if err != nil || first != nil && got != *first {
					return nil, notTyped("the %s operator between a missing field and a quantity", c.Operator)
				}
				first = &got
			}
		}
		return t.b.Bool(*first), nil
	}
	e, err := t.b.Parse(pred)
	if err != nil {
		return nil, false, notTyped("%v", err)
	}
	both := t.b.Substitute(t.b.Substitute(e, "x", paths[0].expr(t.b)), "y", paths[1].expr(t.b))
	present := func(p *qpath) celbuild.Expr {
		if p.strict {
			// Kyverno fails where it is missing, and so does the read.
			return nil
		}
		return p.present(t.b)
	}
	kp, vp := present(paths[0]), present(paths[1])
	onKey := both
	if vp != nil {
		noValue, err := constant(quantityProbes, []any{absent(paths[1])})
		if err != nil {
			return nil, false, err
		}
		onKey = t.b.Cond(vp, both, noValue)
	}
	out := onKey
	if kp != nil {
		onNoKey, err := constant([]any{absent(paths[0])}, quantityProbes)
		if err != nil {
			return nil, false, err
		}
		if vp != nil {
			neither, err := constant([]any{absent(paths[0])}, []any{absent(paths[1])})
			if err != nil {
				return nil, false, err
			}
			onNoKey = t.b.Cond(vp, onNoKey, neither)
		}
		out = t.b.Cond(kp, onKey, onNoKey)
	}
	for _, p := range paths {
		for _, sp := range p.schemaPaths() {
			t.readFormat(sp, ir.FormatQuantity)
		}
	}
	return out, paths[0].mayErr() || paths[1].mayErr(), nil
}

// quantitiesAgree checks the typed comparison ty (pred) against the exact
// operator ex (exact) on pairs of quantities, once per pair of texts.
func quantitiesAgree(exact, pred string, ex, ty func(x, y any) (bool, error)) error {
	key := exact + "\x00" + pred
	if err, ok := agreed.Load(key); ok {
		return err.(agreement).err
	}
	var out error
probes:
	for _, x := range quantityProbes {
		for _, y := range quantityProbes {
			want, err := ex(x, y)
			if err != nil {
				continue
			}
			if got, err := ty(x, y); err != nil || got != want {
				out = notTyped("%s decides %v and %v as %v, Kyverno as %v", pred, x, y, got, want)
				break probes
			}
		}
	}
	agreed.Store(key, agreement{out})
	return out
}

// pairProgram is the predicate pred over x and y, evaluated unchecked (the
// values are dynamic).
func pairProgram(pred string) (func(x, y any) (bool, error), error) {
	env, err := evalEnv()
	if err != nil {
		return nil, err
	}
	a, iss := env.Parse(pred)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	p, err := env.Program(a)
	if err != nil {
		return nil, err
	}
	return func(x, y any) (bool, error) {
		out, _, err := p.Eval(map[string]any{"x": x, "y": y})
		if err != nil {
			return false, err
		}
		b, ok := out.Value().(bool)
		if !ok {
			return false, notTyped("%s is not a boolean", pred)
		}
		return b, nil
	}, nil
}

// An In operator between two lists of strings, such as
//
//	key: "{{ element.volumeMounts[].name || `[]` }}"
//	operator: AnyIn
//	value: "{{ emptydirnames }}"   # request.object.spec.volumes[?emptyDir].name
//
// asks whether some (every, none) key is one of the values. Kyverno
// matches each pair as wildcard patterns both ways; names that can hold
// no wildcard (an enum's values, or names the API server validates as
// DNS labels: ir.FormatDNSLabel) match only as themselves:
//
//	container.?volumeMounts.orValue([]).exists(volumeMount,
//	  object.spec.?volumes.orValue([]).exists(volume, <filter> && volumeMount.name == volume.name))
//
// and other strings as wildcard patterns of each other, the registry
// allow-list of a ConfigMap against the images:
//
//	object.spec.containers.exists(container, !params.data.registries.split(",").exists(registry,
//	  <wildcard.Match(container.image, registry) || wildcard.Match(registry, container.image)>))
//
// Each is checked against the exact operator on pairs of lists of names,
// and of patterns where a side may hold them (listsAgree), where a list
// that is null as a whole must be decided as the empty list.

// nameProbes are the names the lists of the probes hold.
var nameProbes = []any{"a", "b", "data", "1"}

// wildcardProbes are the strings that may hold wildcards the lists of the
// probes hold besides: patterns, and text a pattern escapes.
var wildcardProbes = []any{"*", "d*", "d?ta", "?", "a.b", "a*b", "(a)", "", "\\", "da\nta"}

// jsonProbes are ConfigMap values Kyverno's In operators parse as JSON:
// arrays of strings (a name, a pattern, none, white space), scalars, and
// text that only starts like them.
var jsonProbes = []any{`["a"]`, `["b","data"]`, `[]`, ` [ "d*" , "1" ]`, `["*"]`, `[""]`, `["a*b", "(a)"]`,
	`1`, ` -2.5e1 `, `true`, `null`, `"a"`, `"d\u0061ta"`, `01`, `"a`, `nul`}

// listsCondition is an In operator between two lists of strings. Names
// that can hold no wildcard match only as themselves; other strings (an
// image, the entries of a ConfigMap value split at commas) match as
// Kyverno matches them, each as a wildcard pattern of the other
// (conditions.Wild). A value list computed by split() from a field that
// may be missing fails the condition there, before the key is read
// (Kyverno substitutes the key, then the value: a key that may fail too
// keeps the exact form).
func (t *Translator) listsCondition(c kyvernov1.Condition, roots Roots, names map[string]bool) (celbuild.Expr, bool, error) {
	op := strings.ToLower(string(c.Operator))
	vals, err := t.keyAndValue(c, roots, names, true)
	if err != nil {
		return nil, false, err
	}
	if v := vals[1]; v.kind == qPath && v.path.shape() == kubeschema.String {
		return t.stringValueCondition(c, vals[0], v.path, names)
	}
	if v := vals[1]; v.kind == qPath && v.path.nullableData {
		return nil, false, notTyped("a ConfigMap's data read strictly as a list")
	}
	var sides [2]stringList
	for i, v := range vals {
		var list *qlist
		var optSrc celbuild.Expr
		if v.kind == qList && v.list.raises != nil && v.list.splitOnly() {
			if i == 0 {
				return nil, false, notTyped("the %s operator on a key that may fail", c.Operator)
			}
			list = v.list
		} else if list, optSrc, err = t.listOf(v, names); err != nil {
			return nil, false, err
		}
		s, ok := t.stringsOf(list, optSrc)
		if !ok {
			return nil, false, notTyped("the %s operator between two {{ }} variables that are not lists of strings", c.Operator)
		}
		sides[i] = s
	}
	for _, g := range sides[0].list.gens {
		for _, h := range sides[1].list.gens {
			if g.v == h.v {
				return nil, false, notTyped("two lists iterated with one variable name")
			}
		}
	}
	exact, err := conditions.Operator(op, "x", "y", "{{ x }}", "{{ y }}")
	if err != nil {
		return nil, false, notTyped("%v", err)
	}
	// Names on both sides match only as themselves; a string that may
	// hold a wildcard matches the other side as a pattern, either way.
	plain := sides[0].plain && sides[1].plain
	match := "a == b"
	if !plain {
		match = conditions.WildEither("a", "b")
	}
	hit := "y.exists(b, " + match + ")"
	pred := inPredicate(op, hit)
	if err := listsAgree(exact, pred, sides[0].list.null != nil && sides[0].optSrc == nil, sides[1].list.null != nil && sides[1].optSrc == nil, !plain); err != nil {
		return nil, false, err
	}
	key, val := sides[0], sides[1]
	var found celbuild.Expr
	if plain {
		found = t.b.Eq(key.value, val.value)
	} else {
		m, err := t.b.Parse(match)
		if err != nil {
			return nil, false, notTyped("%v", err)
		}
		found = t.b.Substitute(t.b.Substitute(m, "a", key.value), "b", val.value)
	}
	out := inOperator(t.b, op, val.some(t.b, found), func(body celbuild.Expr) celbuild.Expr { return key.some(t.b, body) })
	if r := val.list.raises; r != nil {
		// The value fails before the key's comprehension reads it.
		text := "failed to substitute variables in condition value: " + val.list.raisesText
		t.errs, t.errText = r, text
		return t.b.Ternary(r, t.b.Index(t.b.MapLiteral(), t.b.String(text)), out), true, nil
	}
	return out, false, nil
}

// stringValueCondition is an In operator between a list of strings and
// one string field, read at admission: a ConfigMap's value such as
//
//	key: "{{ request.object.spec.containers[].imagePullPolicy }}"
//	operator: AnyNotIn
//	value: "{{ cfg.data.\"pull-policy\" }}"
//
// Kyverno takes the string as a one-element list, matched against each
// key as wildcard patterns both ways (one way where the keys are names),
// unless it reads as JSON or a range, which Kyverno parses at admission.
// JSON scalars and arrays of plain strings are read here as Kyverno reads
// them; other JSON (arrays of anything else, objects) and ranges the
// translation, typed or exact, does not parse: it raises an error there
// (conditions.ParsedAtAdmission), before it reads the keys. A ConfigMap
// without data gives null, which decides the operator as Kyverno does.
func (t *Translator) stringValueCondition(c kyvernov1.Condition, keyVal qval, p *qpath, names map[string]bool) (celbuild.Expr, bool, error) {
	op := strings.ToLower(string(c.Operator))
	if p.hasDflt || !p.strict {
		return nil, false, notTyped("the %s operator on a string value with a default", c.Operator)
	}
	list, optSrc, err := t.listOf(keyVal, names)
	if err != nil {
		return nil, false, err
	}
	keys, ok := t.stringsOf(list, optSrc)
	if !ok {
		return nil, false, notTyped("the %s operator on a key that is not a list of strings", c.Operator)
	}
	keyPlain := keys.plain
	exact, err := conditions.Operator(op, "x", "y", "{{ x }}", "{{ y }}")
	if err != nil {
		return nil, false, notTyped("%v", err)
	}
	// A name matches the value only as the value's pattern.
	match := conditions.WildEither("a", "y")
	if keyPlain {
		match = conditions.Wild("y", "a")
	}
	// Text Kyverno parses as JSON (conditions.JSONStrings, JSONNull,
	// JSONNotStrings): an array of plain strings is matched as a list's
	// strings; null holds none; a number or a string is an invalid type,
	// false. A key that is the JSON text itself raises admitc's error:
	// Kyverno then takes the value as that key when it is the only one.
	raise := "{}['" + conditions.NotParsedAtAdmission + "']"
	isJSON, strs := conditions.JSONStrings("y")
	matchJSON := conditions.WildEither("a", "s")
	if keyPlain {
		matchJSON = conditions.Wild("s", "a")
	}
	hitJSON := strs + ".exists(s, " + matchJSON + ")"
	if !keyPlain {
		hitJSON = "(a == y ? " + raise + " : " + hitJSON + ")"
	}
	hitNull := "(a == y ? " + raise + " : false)"
	invalid := "false"
	if op == "anyin" || op == "allin" {
		invalid = "(x.exists(a, a == y) ? " + raise + " : false)"
	}
	pred := inPredicate(op, match)
	if !p.plain {
		pred = "(" + isJSON + " ? " + inPredicate(op, hitJSON) + " : " + conditions.JSONNull("y") + " ? " + inPredicate(op, hitNull) +
			" : " + conditions.JSONNotStrings("y") + " ? " + invalid + " : " + pred + ")"
	}
	null, err := stringValueAgree(exact, pred, keyPlain)
	if err != nil {
		return nil, false, err
	}
	value := p.expr(t.b)
	foundBy := func(match string) (celbuild.Expr, error) {
		m, err := t.b.Parse(match)
		if err != nil {
			return nil, notTyped("%v", err)
		}
		return t.b.Substitute(t.b.Substitute(m, "a", keys.value), "y", value), nil
	}
	found, err := foundBy(match)
	if err != nil {
		return nil, false, err
	}
	some := func(body celbuild.Expr) celbuild.Expr { return keys.some(t.b, body) }
	out := inOperator(t.b, op, found, some)
	if !p.plain {
		for _, name := range []string{"i", "t", "s"} {
			if t.b.Uses(keys.value, name) > 0 || t.b.Uses(value, name) > 0 {
				return nil, false, notTyped("a JSON value's strings would be named as a variable the key reads (%s)", name)
			}
		}
		var parts []celbuild.Expr
		for _, text := range []string{isJSON, hitJSON, conditions.JSONNull("y"), hitNull, conditions.JSONNotStrings("y"), "a == y", conditions.ParsedAtAdmission("y"), raise} {
			e, err := foundBy(text)
			if err != nil {
				return nil, false, err
			}
			parts = append(parts, e)
		}
		isJSON, foundJSON, isNull, foundNull, notStrings, same, parsed, raise := parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], parts[6], parts[7]
		invalid := t.b.Bool(false)
		if op == "anyin" || op == "allin" {
			invalid = t.b.Ternary(some(same), raise, t.b.Bool(false))
		}
		out = t.b.Ternary(isJSON, inOperator(t.b, op, foundJSON, some),
			t.b.Ternary(isNull, inOperator(t.b, op, foundNull, some),
				t.b.Ternary(notStrings, invalid,
					t.b.Ternary(parsed, raise, out))))
	}
	if p.nullableData {
		out = t.b.Ternary(t.b.Has(p.root, p.keys[0]), out, t.b.Bool(null))
	}
	return out, !p.plain || p.mayErr(), nil
}

// stringValueAgree checks pred against the exact operator over the list
// x and the string y on probes (wildcard patterns among the keys unless
// keyPlain), skipping the values Kyverno parses (both raise there), and
// returns what the exact operator decides on a null value, which must not
// depend on the keys.
func stringValueAgree(exact, pred string, keyPlain bool) (bool, error) {
	type result struct {
		null bool
		err  error
	}
	cacheKey := fmt.Sprint("string value\x00", exact, "\x00", pred, "\x00", keyPlain)
	if r, ok := agreed.Load(cacheKey); ok {
		r := r.(result)
		return r.null, r.err
	}
	null, err := stringValueAgreeOnProbes(exact, pred, keyPlain)
	agreed.Store(cacheKey, result{null, err})
	return null, err
}

func stringValueAgreeOnProbes(exact, pred string, keyPlain bool) (bool, error) {
	ex, err := pairProgram(exact)
	if err != nil {
		return false, notTyped("the exact operator: %v", err)
	}
	ty, err := pairProgram(pred)
	if err != nil {
		return false, notTyped("the typed operator %s: %v", pred, err)
	}
	keys := []any{[]any{}}
	names := nameProbes
	if !keyPlain {
		names = append(append([]any{}, nameProbes...), wildcardProbes...)
		keys = append(keys, []any{`["a"]`}, []any{`[]`, "a"})
	}
	for _, a := range names {
		keys = append(keys, []any{a}, []any{a, "data"})
	}
	var null *bool
	for _, x := range keys {
		for _, y := range append(append(append([]any{}, nameProbes...), wildcardProbes...), jsonProbes...) {
			want, err := ex(x, y)
			if err != nil {
				// A value Kyverno parses: the exact form raises.
				continue
			}
			got, err := ty(x, y)
			if err != nil && strings.Contains(err.Error(), conditions.NotParsedAtAdmission) && slices.Contains(x.([]any), y) {
				// A key that is the JSON text itself raises.
				continue
			}
			if err != nil || got != want {
				return false, notTyped("%s decides %v and %q as %v, Kyverno as %v", pred, x, y, got, want)
			}
		}
		n, err := ex(x, nil)
		if err != nil || null != nil && n != *null {
			return false, notTyped("Kyverno decides a null value by the keys")
		}
		null = &n
	}
	return *null, nil
}

// stringList is a list of strings as an In operator reads it: each
// element's value, present where its field is (nil: always), plain when
// it can hold no wildcard.
type stringList struct {
	list           *qlist
	optSrc         celbuild.Expr
	value, present celbuild.Expr
	plain          bool
}

// stringsOf is l (iterated from optSrc where it may be null) as a list of
// strings; false when its elements are not strings.
func (t *Translator) stringsOf(l *qlist, optSrc celbuild.Expr) (stringList, bool) {
	s := stringList{list: l, optSrc: optSrc}
	switch e := l.elem; {
	case e.kind == qPath && e.path.shape() == kubeschema.String:
		s.value, s.present, s.plain = e.path.expr(t.b), e.path.present(t.b), e.path.plain
	case e.kind == qScalar && e.scalar.shape == kubeschema.String && !e.scalar.mayErr:
		s.value, s.plain = e.scalar.expr, e.scalar.plain
	default:
		return stringList{}, false
	}
	return s, true
}

// some is body holding for an element the list holds (a missing field is
// not one of them).
func (s stringList) some(b *celbuild.Builder, body celbuild.Expr) celbuild.Expr {
	if s.present != nil {
		body = b.And(s.present, body)
	}
	return s.list.exists(b, body, s.optSrc)
}

// inPredicate is the In operator op over the list x, a key a matching
// where hit holds, as text for the probes.
func inPredicate(op, hit string) string {
	return map[string]string{"anyin": "x.exists(a, " + hit + ")", "allin": "x.all(a, " + hit + ")",
		"anynotin": "x.exists(a, !" + hit + ")", "allnotin": "x.all(a, !" + hit + ")"}[op]
}

// inOperator is the In operator op over the keys some iterates
// (some(body): body holds for one of them), found a key's match.
func inOperator(b *celbuild.Builder, op string, found celbuild.Expr, some func(celbuild.Expr) celbuild.Expr) celbuild.Expr {
	switch op {
	case "anyin":
		return some(found)
	case "allin":
		return b.Not(some(b.Not(found)))
	case "anynotin":
		return some(b.Not(found))
	}
	return b.Not(some(found))
}

// splitOnly says l is a list split() computed, unfiltered.
func (l *qlist) splitOnly() bool {
	if len(l.gens) != 1 || l.gens[0].filter != nil || l.elem.kind != qScalar {
		return false
	}
	name, ok := celbuild.IdentName(l.elem.scalar.expr)
	return ok && name == l.gens[0].v
}

// listsAgree checks pred against the exact operator over the lists x and
// y on lists of probe names (empty, one, two); a side that may be null
// as a whole (xNull, yNull) is decided by the translation as the empty
// list, so the exact operator must decide null as it decides [].
func listsAgree(exact, pred string, xNull, yNull, wildcards bool) error {
	key := fmt.Sprint(exact, "\x00", pred, "\x00", xNull, yNull, wildcards)
	if err, ok := agreed.Load(key); ok {
		return err.(agreement).err
	}
	err := listsAgreeOnProbes(exact, pred, xNull, yNull, wildcards)
	agreed.Store(key, agreement{err})
	return err
}

// agreed are the checks of typed operators against exact ones made so
// far, by their texts: a policy's autogen rules ask the same again.
var agreed sync.Map

type agreement struct{ err error }

func listsAgreeOnProbes(exact, pred string, xNull, yNull, wildcards bool) error {
	ex, err := pairProgram(exact)
	if err != nil {
		return notTyped("the exact operator: %v", err)
	}
	ty, err := pairProgram(pred)
	if err != nil {
		return notTyped("the typed operator %s: %v", pred, err)
	}
	lists := []any{[]any{}}
	for _, a := range nameProbes {
		lists = append(lists, []any{a})
		for _, b := range nameProbes {
			lists = append(lists, []any{a, b})
		}
	}
	if wildcards {
		// Each string that may be a pattern alone and beside a name.
		for _, w := range wildcardProbes {
			lists = append(lists, []any{w}, []any{"data", w}, []any{w, "a"})
		}
	}
	for _, x := range lists {
		for _, y := range lists {
			want, err := ex(x, y)
			if err != nil {
				return notTyped("the exact operator fails on %v and %v: %v", x, y, err)
			}
			if got, err := ty(x, y); err != nil || got != want {
				return notTyped("%s decides %v and %v as %v, Kyverno as %v", pred, x, y, got, want)
			}
			if xNull && len(x.([]any)) == 0 {
				if n, err := ex(nil, y); err != nil || n != want {
					return notTyped("Kyverno decides a null key otherwise than an empty one")
				}
			}
			if yNull && len(y.([]any)) == 0 {
				if n, err := ex(x, nil); err != nil || n != want {
					return notTyped("Kyverno decides a null value otherwise than an empty one")
				}
			}
		}
	}
	return nil
}
