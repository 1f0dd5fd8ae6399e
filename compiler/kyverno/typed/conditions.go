package typed

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// Block is an any/all condition block translated against the schema:
// Holds when Kyverno's evaluation gives true. MayErr says evaluating it may
// fail (a strict read of a field that may be missing, Kyverno's "Unknown
// key"): such a block's parts are kept in Kyverno's order with
// conditionals, where CEL's || and && would absorb an error.
type Block struct {
	Holds  celbuild.Expr
	MayErr bool
	// Errs, when MayErr, is where evaluating the block fails, in
	// Kyverno's order: an expression that itself never fails (nil: not
	// known). Holds decides only where Errs is false. ErrText is Kyverno's
	// error there (a string).
	Errs    celbuild.Expr
	ErrText celbuild.Expr
	// Known are the keyPaths under the foreach element that are present
	// wherever Holds is true: a precondition that no missing value meets
	// ({{ element.resources.requests.memory || '' }} NotEquals ""). The
	// entry's deny conditions read them without a presence test.
	Known []string
}

// Conditions translates an any/all block (Kyverno's
// evaluateAnyAllConditions): the any conditions up to the first that
// holds, then the all conditions up to the first that does not, an error
// on the way failing the block; an empty block holds.
func (t *Translator) Conditions(c kyvernov1.AnyAllConditions, roots Roots) (Block, error) {
	names := map[string]bool{}
	var anyOut, allOut *Block
	var known []string
	// Errs is built from the last condition back: a condition fails the
	// block where it fails itself, or, where it does not decide it (false
	// in any, true in all), where the ones after it fail.
	unknownErrs := false
	errsAfter := func(e celbuild.Expr, mayErr bool, decides bool, rest *Block) (celbuild.Expr, celbuild.Expr) {
		var next, nextText celbuild.Expr
		if rest != nil && rest.MayErr {
			if rest.Errs == nil {
				unknownErrs = true
				return nil, nil
			}
			if decides {
				next = t.b.And(t.b.Not(e), rest.Errs)
			} else {
				next = t.b.And(e, rest.Errs)
			}
			nextText = rest.ErrText
		}
		if !mayErr {
			return next, nextText
		}
		if t.errs == nil {
			unknownErrs = true
			return nil, nil
		}
		text := t.b.String(t.errText)
		if next == nil {
			return t.errs, text
		}
		return t.b.Or(t.errs, next), t.b.Ternary(t.errs, text, nextText)
	}
	if c.AnyConditions != nil {
		out := Block{Holds: t.b.Bool(false)}
		for i := len(c.AnyConditions) - 1; i >= 0; i-- {
			e, mayErr, err := t.condition(c.AnyConditions[i], roots, names)
			if err != nil {
				return Block{}, fmt.Errorf("any[%d]: %w", i, err)
			}
			if len(c.AnyConditions) == 1 {
				// Of several, any one may be the one that holds.
				known = append(known, t.implied...)
			}
			errs, text := errsAfter(e, mayErr, true, &out)
			if mayErr {
				out = Block{Holds: t.b.Ternary(e, t.b.Bool(true), out.Holds), MayErr: true, Errs: errs, ErrText: text}
			} else {
				out = Block{Holds: t.b.Or(e, out.Holds), MayErr: out.MayErr, Errs: errs, ErrText: text}
			}
		}
		anyOut = &out
	}
	if len(c.AllConditions) > 0 {
		var out *Block
		for i := len(c.AllConditions) - 1; i >= 0; i-- {
			e, mayErr, err := t.condition(c.AllConditions[i], roots, names)
			if err != nil {
				return Block{}, fmt.Errorf("all[%d]: %w", i, err)
			}
			known = append(known, t.implied...)
			errs, text := errsAfter(e, mayErr, false, out)
			switch {
			case out == nil:
				out = &Block{Holds: e, MayErr: mayErr, Errs: errs, ErrText: text}
			case mayErr:
				out = &Block{Holds: t.b.Ternary(e, out.Holds, t.b.Bool(false)), MayErr: true, Errs: errs, ErrText: text}
			default:
				out = &Block{Holds: t.b.And(e, out.Holds), MayErr: out.MayErr, Errs: errs, ErrText: text}
			}
		}
		allOut = out
	}
	var out Block
	switch {
	case anyOut == nil && allOut == nil:
		out = Block{Holds: t.b.Bool(true)}
	case allOut == nil:
		out = *anyOut
	case anyOut == nil:
		out = *allOut
	case !allOut.MayErr:
		// Kyverno evaluates the all block whatever the any block gave.
		out = Block{Holds: t.b.And(anyOut.Holds, allOut.Holds), MayErr: anyOut.MayErr}
	case !anyOut.MayErr:
		out = Block{Holds: t.b.And(allOut.Holds, anyOut.Holds), MayErr: true}
	default:
		out = Block{Holds: t.b.Ternary(anyOut.Holds, allOut.Holds, t.b.Ternary(allOut.Holds, t.b.Bool(false), t.b.Bool(false))), MayErr: true}
	}
	out.Errs, out.ErrText = nil, nil
	if out.MayErr && !unknownErrs {
		// Kyverno evaluates the any block, then the all block: either
		// failing fails it.
		for _, part := range []*Block{allOut, anyOut} {
			if part == nil || !part.MayErr {
				continue
			}
			if out.Errs == nil {
				out.Errs, out.ErrText = part.Errs, part.ErrText
				continue
			}
			out.Errs, out.ErrText = t.b.Or(part.Errs, out.Errs), t.b.Ternary(part.Errs, part.ErrText, out.ErrText)
		}
	}
	out.Known = known
	return out, nil
}

// wholeVariable is the query of a key that is exactly one {{ }} variable.
func wholeVariable(s string) (string, bool) {
	if !strings.HasPrefix(s, "{{") || !strings.HasSuffix(s, "}}") || strings.Count(s, "{{") != 1 || strings.Count(s, "}}") != 1 {
		return "", false
	}
	q := strings.TrimSpace(s[2 : len(s)-2])
	if q == "" || q == "@" || strings.HasPrefix(q, "-") {
		return "", false
	}
	return q, true
}

// hasVariable says whether a literal holds {{ }} text.
func hasVariable(v any) bool {
	data, _ := json.Marshal(v)
	return strings.Contains(string(data), "{{")
}

// condition is one condition: its CEL, and whether it may fail. One
// that reads Kyverno's images variable fails where the images do not
// parse: ImagesParseVariable is true there or fails.
func (t *Translator) condition(c kyvernov1.Condition, roots Roots, names map[string]bool) (celbuild.Expr, bool, error) {
	t.readsImages, t.implied, t.errs, t.errText, t.errVar = false, nil, nil, "", ""
	if key, ok := c.GetKey().(string); ok {
		t.errVar, _ = wholeVariable(key)
	}
	e, mayErr, err := t.conditionOf(c, roots, names)
	if !mayErr {
		t.errs = nil
	}
	if err != nil || !t.ReadsImages() {
		if err == nil && t.deferImages != nil {
			t.deferImages.others++
		}
		return e, mayErr, err
	}
	t.usedImages, t.errs = true, nil
	if t.deferImages != nil {
		t.deferImages.reads++
		return e, mayErr, nil
	}
	return t.b.Ternary(t.imagesParse(), e, t.b.Bool(false)), true, nil
}

// imagesDeferred counts, while a foreach entry's conditions are
// translated, the conditions that read Kyverno's images and those that do
// not.
type imagesDeferred struct{ reads, others int }

// ConditionsOnParsedImages translates a block as Conditions does, with
// the images assumed to parse, and says whether every condition of it
// reads them (reads) or none does; ok is false when some do and some do
// not. Where every condition reads the images, evaluating the block fails
// as a whole where they do not parse: Holds under a test of
// ImagesParseVariable, which a comprehension may take per element.
func (t *Translator) ConditionsOnParsedImages(c kyvernov1.AnyAllConditions, roots Roots) (b Block, reads, ok bool, err error) {
	d := &imagesDeferred{}
	t.deferImages = d
	defer func() { t.deferImages = nil }()
	b, err = t.Conditions(c, roots)
	if err != nil {
		return Block{}, false, false, err
	}
	if d.reads == 0 {
		return b, false, true, nil
	}
	if d.others > 0 {
		return Block{}, false, false, nil
	}
	b.Holds = t.b.Ternary(t.imagesParse(), b.Holds, t.b.Bool(false))
	return b, true, true, nil
}

// UsedImages says whether a condition translated so far read Kyverno's
// images variable.
func (t *Translator) UsedImages() bool { return t.usedImages }

func (t *Translator) conditionOf(c kyvernov1.Condition, roots Roots, names map[string]bool) (celbuild.Expr, bool, error) {
	rawKey, rawVal := c.GetKey(), c.GetValue()
	if hasVariable(rawVal) {
		lit, ok, err := t.constantValue(rawVal, roots, names)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return t.valueCondition(c, roots, names)
		}
		rawVal = lit
	}
	o, err := newOperator(string(c.Operator), rawVal)
	if err != nil {
		return nil, false, err
	}
	s, isString := rawKey.(string)
	if !isString || !hasVariable(rawKey) {
		e, err := t.constantCondition(o, rawKey)
		return e, false, err
	}
	q, ok := wholeVariable(ElementName(s, roots))
	if !ok {
		return nil, false, notTyped("a key that is not one {{ }} variable")
	}
	v, err := t.query(q, roots, names)
	if err != nil {
		return nil, false, err
	}
	switch v.kind {
	case qNull:
		// A null key: every operator is false.
		return t.b.Bool(false), false, nil
	case qLit:
		e, err := t.constantCondition(o, v.lit)
		return e, false, err
	case qScalar:
		pred, err := o.scalar(v.scalar.shape, v.scalar.plain)
		if err != nil {
			return nil, false, err
		}
		e, err := t.apply(pred, v.scalar.expr)
		return e, v.scalar.mayErr, err
	case qPath:
		if v.path.shape() == kubeschema.List {
			return t.listCondition(o, v, names)
		}
		if s := v.path.shape(); (s == kubeschema.Object || s == kubeschema.Map) && v.path.hasDflt {
			return t.objectCondition(o, v.path)
		}
		return t.pathCondition(o, v.path)
	case qList:
		return t.listCondition(o, v, names)
	}
	return nil, false, notTyped("a key of this kind")
}

// constantValue is a condition's value that is one {{ }} variable giving
// a constant (a context variable's value): the constant, as if written
// in its place.
func (t *Translator) constantValue(raw any, roots Roots, names map[string]bool) (any, bool, error) {
	s, ok := raw.(string)
	if !ok {
		return nil, false, nil
	}
	text, ok := wholeVariable(s)
	if !ok {
		return nil, false, nil
	}
	// Only tried: the names it takes are not kept.
	v, err := t.query(text, roots, maps.Clone(names))
	if err != nil || v.kind != qLit {
		return nil, false, nil
	}
	return v.lit, true, nil
}

// valueCondition is an In operator with a literal string key and a value
// that is one {{ }} variable holding a list of strings ("ALL" AnyNotIn
// {{ element.securityContext.capabilities.drop[] || `[]` }}): the key
// matches an element of the list either way (each may be a wildcard
// pattern), a null list holds no operator.
func (t *Translator) valueCondition(c kyvernov1.Condition, roots Roots, names map[string]bool) (celbuild.Expr, bool, error) {
	key, ok := c.GetKey().(string)
	raw, isString := c.GetValue().(string)
	if ok && hasVariable(key) && isString {
		return t.variablesCondition(c, roots, names)
	}
	if !ok || hasVariable(key) || !isString {
		return nil, false, notTyped("a value with {{ }} variables")
	}
	q, ok := wholeVariable(raw)
	if !ok {
		return nil, false, notTyped("a value that is not one {{ }} variable")
	}
	op := strings.ToLower(string(c.Operator))
	switch op {
	case "anyin", "allin", "anynotin", "allnotin":
	default:
		return nil, false, notTyped("the %s operator with a variable value", c.Operator)
	}
	if conditions.IsRange(key) || json.Valid([]byte(key)) {
		return nil, false, notTyped("a key that Kyverno reads as a range or JSON")
	}
	fresh := 0
	keyCEL, err := conditions.Value(key, conditions.Scope{}, &fresh)
	if err != nil {
		return nil, false, notTyped("%v", err)
	}
	exact, err := conditions.Operator(op, keyCEL, "x", key, "{{ x }}")
	if err != nil {
		return nil, false, notTyped("%v", err)
	}
	v, err := t.query(q, roots, names)
	if err != nil {
		return nil, false, err
	}
	if v.kind == qNull {
		// A null value (Kyverno's images on DELETE).
		got, err := evalBool(exact, "x", nil)
		if err != nil {
			return nil, false, notTyped("the %s operator on a null value: %v", c.Operator, err)
		}
		return t.b.Bool(got), false, nil
	}
	list, optSrc, err := t.listOf(v, names)
	if err != nil {
		return nil, false, err
	}
	elems, ok := t.stringsOf(list, optSrc)
	if !ok {
		return nil, false, notTyped("a value that is not a list of strings")
	}
	elemValue, elemPresent, plain := elems.value, elems.present, elems.plain
	hit := stringFound([]string{key}, !plain)
	found := "x.exists(x, " + hit + ")"
	typedText := found
	if strings.Contains(op, "not") {
		typedText = "!" + found
	}
	if err := agree(exact, typedText, listProbes(kubeschema.String, key, plain)[1:]); err != nil {
		return nil, false, err
	}
	// A null value: every In operator is false.
	if got, err := evalBool(exact, "x", nil); err != nil || got {
		return nil, false, notTyped("an operator that holds on a null value")
	}
	if list.loose != nil {
		// "" found or not as a missing element: no need to test it.
		if got, err := evalBool(hit, "x", ""); err == nil && !got {
			list = loosened(list)
		}
	}
	body, err := t.apply(hit, elemValue)
	if err != nil {
		return nil, false, err
	}
	if elemPresent != nil {
		body = t.b.And(elemPresent, body)
	}
	exists := list.exists(t.b, body, optSrc)
	if strings.Contains(op, "not") {
		// Not found in a list that is there.
		if list.null != nil {
			return t.b.And(t.b.Not(list.null), t.b.Not(list.exists(t.b, body, nil))), false, nil
		}
		return t.b.Not(exists), false, nil
	}
	return exists, false, nil
}

// loosened is l with its first generator's loose filter.
func loosened(l *qlist) *qlist {
	out := *l
	out.gens = append([]qgen(nil), l.gens...)
	out.gens[0].filter, out.loose = l.loose, nil
	return &out
}

// listOf is a list value: a projection, or a list field (with `|| []`).
func (t *Translator) listOf(v qval, names map[string]bool) (*qlist, celbuild.Expr, error) {
	q := &query{t: t, b: t.b, names: names}
	switch v.kind {
	case qList:
		if v.list.mayErr {
			return nil, nil, notTyped("a list whose filter may fail")
		}
		return v.list, v.list.optSrc, nil
	case qPath:
		p := v.path
		bare := *p
		if p.hasDflt {
			if l, ok := p.dflt.([]any); !ok || len(l) != 0 {
				return nil, nil, notTyped("a list defaulting to %v", p.dflt)
			}
			bare.hasDflt, bare.dflt = false, nil
		}
		if p.strict && p.mayErr() {
			return nil, nil, notTyped("a strict read of a list that may be missing")
		}
		l, err := q.asList(qval{kind: qPath, path: &bare})
		if err != nil || l == nil {
			return nil, nil, notTyped("a list: %v", err)
		}
		if p.hasDflt && l.null != nil {
			out := *l
			out.gens = append([]qgen(nil), l.gens...)
			out.gens[0].src, out.null = l.optSrc, nil
			return &out, nil, nil
		}
		return l, l.optSrc, nil
	}
	return nil, nil, notTyped("a value that is not a list")
}

// exists is body holding for an element (optSrc, when set, iterates the
// first list where it may be null).
func (l *qlist) exists(b *celbuild.Builder, body, optSrc celbuild.Expr) celbuild.Expr {
	for i := len(l.gens) - 1; i >= 0; i-- {
		g := l.gens[i]
		if g.filter != nil {
			body = b.And(g.filter, body)
		}
		src := g.src
		if i == 0 && optSrc != nil {
			src = optSrc
		}
		body = b.Exists(src, g.v, body)
	}
	if l.null != nil && optSrc == nil {
		body = b.And(b.Not(l.null), body)
	}
	return body
}

// constantCondition is a condition on a literal key, evaluated now.
func (t *Translator) constantCondition(o operator, key any) (celbuild.Expr, error) {
	fresh := 0
	k, err := conditions.Value(key, conditions.Scope{}, &fresh)
	if err != nil {
		return nil, notTyped("the key: %v", err)
	}
	exact, err := conditions.Operator(o.op, k, o.val, key, o.raw)
	if err != nil {
		return nil, notTyped("%v", err)
	}
	got, err := evalBool(exact, "x", nil)
	if err != nil {
		return nil, notTyped("a literal condition that fails: %v", err)
	}
	return t.b.Bool(got), nil
}

// apply is the predicate text pred over x applied to value.
func (t *Translator) apply(pred string, value celbuild.Expr) (celbuild.Expr, error) {
	e, err := t.b.Parse(pred)
	if err != nil {
		return nil, notTyped("predicate %s: %v", pred, err)
	}
	return t.b.Substitute(e, "x", value), nil
}

// pathCondition is an operator on a scalar field.
func (t *Translator) pathCondition(o operator, p *qpath) (celbuild.Expr, bool, error) {
	shape := p.shape()
	pred, err := o.scalar(shape, p.plain)
	if err != nil {
		return nil, false, err
	}
	value := p.expr(t.b)
	if p.strict {
		e, err := t.apply(pred, value)
		t.strictReadErr(p)
		return e, p.mayErr(), err
	}
	// A missing value is null, or the `|| literal`; so is a false-like one.
	var absent any
	if p.hasDflt {
		absent = p.dflt
	}
	exact, err := o.exact()
	if err != nil {
		return nil, false, err
	}
	absentHolds, err := evalBool(exact, "x", absent)
	if err != nil {
		return nil, false, notTyped("the operator on the default: %v", err)
	}
	if !absentHolds && p.elem {
		// It holds only where the value, and every field on its way, is.
		for i := range p.keys {
			t.implied = append(t.implied, keyPath(p.keys[:i+1]...))
		}
	}
	present := p.present(t.b)
	onValue, err := t.apply(pred, value)
	if err != nil {
		return nil, false, err
	}
	var falsy any
	if p.hasDflt {
		switch shape {
		case kubeschema.String:
			falsy = ""
		case kubeschema.Boolean:
			falsy = false
		}
	}
	if falsy != nil {
		if got, err := evalBool(pred, "x", falsy); err != nil || got != absentHolds {
			// A false-like value takes the default, which decides otherwise.
			notFalsy := t.b.Ne(value, t.b.Literal(literalOf(falsy)))
			present = andMaybe(t.b, present, notFalsy)
			return t.presentOr(present, onValue, absentHolds), false, nil
		}
	}
	if present == nil {
		return onValue, false, nil
	}
	// The value as an optional chain, with a default the predicate decides
	// as a missing value is decided.
	if opt, ok := p.optional(t.b); ok {
		for _, d := range defaultsOf(shape, absent) {
			if got, err := evalBool(pred, "x", d); err == nil && got == absentHolds {
				e, err := t.apply(pred, t.b.OrValue(opt, t.b.Literal(literalOf(d))))
				return e, false, err
			}
		}
	}
	return t.presentOr(present, onValue, absentHolds), false, nil
}

// objectCondition is an operator on an object or a map read with `||
// literal`: the literal where the value is missing or empty (JMESPath's
// {} is false-like), else the value, which the operator must decide the
// same way for every non-empty object (checked on probes: a scalar
// literal never equals an object).
func (t *Translator) objectCondition(o operator, p *qpath) (celbuild.Expr, bool, error) {
	exact, err := o.exact()
	if err != nil {
		return nil, false, err
	}
	onDefault, err := evalBool(exact, "x", p.dflt)
	if err != nil {
		return nil, false, notTyped("the operator on the default: %v", err)
	}
	var onObject *bool
	for _, probe := range []any{map[string]any{"a": "b"}, map[string]any{"x": int64(1), "y": []any{"z"}}, map[string]any{"key": map[string]any{}}} {
		got, err := evalBool(exact, "x", probe)
		if err != nil || onObject != nil && *onObject != got {
			return nil, false, notTyped("the %s operator on an object", o.op)
		}
		onObject = &got
	}
	if onDefault == *onObject {
		return t.b.Bool(onDefault), false, nil
	}
	empty, err := t.missingOrEmpty(p)
	if err != nil {
		return nil, false, err
	}
	if onDefault {
		return empty, false, nil
	}
	return t.b.Not(empty), false, nil
}

// missingOrEmpty says an object or a map read by p is missing or has no
// key: a map of size 0, an object without any of its schema's fields (one
// that is always written, such as a struct field of a built-in kind,
// makes it never empty).
func (t *Translator) missingOrEmpty(p *qpath) (celbuild.Expr, error) {
	value := p.expr(t.b)
	var empty celbuild.Expr
	switch p.shape() {
	case kubeschema.Map:
		empty = t.b.Eq(t.b.Size(value), t.b.Int(0))
	case kubeschema.Object:
		n := p.final()
		fields, ok := n.Fields()
		if !ok {
			return nil, notTyped("an object whose schema does not name its fields")
		}
		if slices.ContainsFunc(fields, n.AlwaysPresent) {
			// A field always written: never empty.
			empty = t.b.Bool(false)
			break
		}
		var absent []celbuild.Expr
		for _, f := range fields {
			absent = append(absent, t.b.Not(t.b.Has(value, f)))
		}
		empty = t.b.And(absent...)
	default:
		return nil, notTyped("emptiness of a %s", p.shape())
	}
	if present := p.present(t.b); present != nil {
		return t.b.Or(t.b.Not(present), empty), nil
	}
	return empty, nil
}

// presentOr is onValue when present holds, else absent.
func (t *Translator) presentOr(present, onValue celbuild.Expr, absent bool) celbuild.Expr {
	if absent {
		return t.b.Or(t.b.Not(present), onValue)
	}
	return t.b.And(present, onValue)
}

// defaultsOf are the literals of a shape that could stand for a missing
// value: the shape's zero, both booleans, the `|| literal`.
func defaultsOf(shape kubeschema.Shape, dflt any) []any {
	var out []any
	switch shape {
	case kubeschema.String:
		out = append(out, "")
		if s, ok := dflt.(string); ok && s != "" {
			out = append(out, s)
		}
	case kubeschema.Integer:
		// The policy's own default first: spec.?replicas.orValue(1).
		if n, ok := dflt.(float64); ok && n == float64(int64(n)) {
			out = append(out, int64(n))
		}
		if len(out) == 0 || out[0] != int64(0) {
			out = append(out, int64(0))
		}
	case kubeschema.Boolean:
		out = append(out, false, true)
	}
	return out
}

// listCondition is an operator on a list: a projection, or a list field.
func (t *Translator) listCondition(o operator, v qval, names map[string]bool) (celbuild.Expr, bool, error) {
	mayErr := false
	var list *qlist
	var optSrc celbuild.Expr
	switch v.kind {
	case qPath:
		p := v.path
		q := &query{t: t, b: t.b, names: names}
		if p.hasDflt {
			if l, ok := p.dflt.([]any); !ok || len(l) != 0 {
				return nil, false, notTyped("a list key defaulting to %v", p.dflt)
			}
			bare := *p
			bare.hasDflt, bare.dflt = false, nil
			l, err := q.asList(qval{kind: qPath, path: &bare})
			if err != nil || l == nil {
				return nil, false, notTyped("a list key: %v", err)
			}
			opt, _ := p.optional(t.b)
			if l.null != nil {
				l.gens[0].src = t.b.OrValue(opt, t.b.List())
			}
			list = &qlist{gens: l.gens, elem: l.elem}
			break
		}
		l, err := q.asList(v)
		if err != nil || l == nil {
			return nil, false, notTyped("a list key: %v", err)
		}
		list = l
		if p.strict {
			// A strict read of a missing list fails, as in Kyverno.
			mayErr, list.null = p.mayErr(), nil
			t.strictReadErr(p)
		} else if list.null != nil {
			opt, _ := p.optional(t.b)
			optSrc = t.b.OrValue(opt, t.b.List())
		}
	case qList:
		list = v.list
		if list.mayErr {
			// exists() and all() would absorb an element's error.
			return nil, false, notTyped("a filter that may fail in a list key")
		}
	}
	elem := list.elem
	var shape kubeschema.Shape
	var value, present celbuild.Expr
	plain := false
	switch elem.kind {
	case qPath:
		shape, value, present, plain = elem.path.shape(), elem.path.expr(t.b), elem.path.present(t.b), elem.path.plain
	case qScalar:
		shape, value, plain = elem.scalar.shape, elem.scalar.expr, elem.scalar.plain
	default:
		return nil, false, notTyped("a list of this kind")
	}
	pred, all, err := o.list(shape, plain)
	if err != nil {
		return nil, false, err
	}
	if pred == "true" || pred == "false" {
		return t.presentOr(negate(t.b, list.null), t.b.Bool(pred == "true"), false), mayErr, nil
	}
	body, err := t.apply(pred, value)
	if err != nil {
		return nil, false, err
	}
	if present != nil {
		if all {
			body = t.b.Or(t.b.Not(present), body)
		} else {
			body = t.b.And(present, body)
		}
	}
	if list.loose != nil {
		// The element "" decided as a missing one: no need to test it.
		if got, err := evalBool(pred, "x", ""); err == nil && got == all {
			list = loosened(list)
		}
	}
	for i := len(list.gens) - 1; i >= 0; i-- {
		g := list.gens[i]
		if g.filter != nil {
			if all {
				body = t.b.Or(t.b.Not(g.filter), body)
			} else {
				body = t.b.And(g.filter, body)
			}
		}
		src := g.src
		if i == 0 && !all && optSrc != nil {
			src = optSrc
		}
		if all {
			body = t.b.All(src, g.v, body)
		} else {
			body = t.b.Exists(src, g.v, body)
		}
	}
	if list.null != nil && (all || optSrc == nil && !list.kept) {
		body = t.b.And(t.b.Not(list.null), body)
	}
	return body, mayErr, nil
}

// literalOf is a Go scalar as a CEL value.
func literalOf(v any) ref.Val {
	switch t := v.(type) {
	case string:
		return types.String(t)
	case bool:
		return types.Bool(t)
	case int64:
		return types.Int(t)
	}
	return types.NullValue
}

// LeadingOperations splits off a block's leading conditions on
// request.operation (the first all conditions, or a lone any condition):
// the operations among ops for which they hold, and the rest of the
// block. Kyverno evaluates them first, so an operation they rule out is
// one the rule never evaluates the rest on.
func (t *Translator) LeadingOperations(c kyvernov1.AnyAllConditions, ops []ir.Operation) ([]ir.Operation, kyvernov1.AnyAllConditions, error) {
	rest := c
	list := c.AllConditions
	lone := c.AnyConditions != nil && len(c.AnyConditions) == 1 && len(c.AllConditions) == 0
	switch {
	case lone:
		list = c.AnyConditions
	case c.AnyConditions != nil:
		return ops, c, nil
	}
	kept := ops
	n := 0
	for _, cond := range list {
		holds, ok, err := t.operationCondition(cond)
		if err != nil {
			return nil, c, err
		}
		if !ok {
			break
		}
		kept = slices.DeleteFunc(slices.Clone(kept), func(op ir.Operation) bool { return !holds[op] })
		n++
	}
	if lone && n == 1 {
		rest = kyvernov1.AnyAllConditions{}
	} else if !lone {
		rest.AllConditions = list[n:]
	}
	return kept, rest, nil
}

// HoistOperations takes out of an all block (after LeadingOperations)
// the conditions on request.operation that follow conditions that cannot
// fail: Kyverno evaluates an all block in order up to the first condition
// that does not hold, so where none before can fail, an operation test
// decides the block wherever it sits. It narrows ops as LeadingOperations
// does. The conditions before are translated over roots to learn whether
// they may fail; where one may, or one does not translate, nothing after
// it moves.
func (t *Translator) HoistOperations(c kyvernov1.AnyAllConditions, ops []ir.Operation, roots Roots) ([]ir.Operation, kyvernov1.AnyAllConditions) {
	if c.AnyConditions != nil || len(c.AllConditions) < 2 {
		return ops, c
	}
	kept := ops
	var rest []kyvernov1.Condition
	for i, cond := range c.AllConditions {
		holds, ok, err := t.operationCondition(cond)
		if err == nil && ok {
			kept = slices.DeleteFunc(slices.Clone(kept), func(op ir.Operation) bool { return !holds[op] })
			continue
		}
		_, mayErr, err := t.condition(cond, roots, map[string]bool{})
		if err != nil || mayErr {
			// Everything from here keeps its place.
			rest = append(rest, c.AllConditions[i:]...)
			break
		}
		rest = append(rest, cond)
	}
	if len(rest) == len(c.AllConditions) {
		return ops, c
	}
	out := c
	out.AllConditions = rest
	return kept, out
}

// operationCondition says whether a condition tests request.operation
// against a literal, and for which operations it holds.
func (t *Translator) operationCondition(c kyvernov1.Condition) (map[ir.Operation]bool, bool, error) {
	s, ok := c.GetKey().(string)
	if !ok || hasVariable(c.GetValue()) {
		return nil, false, nil
	}
	q, ok := wholeVariable(s)
	if !ok {
		return nil, false, nil
	}
	v, err := t.query(q, Roots{Operation: t.b.Ident("op")}, map[string]bool{})
	if err != nil || v.kind != qScalar || !v.scalar.plain {
		return nil, false, nil
	}
	o, err := newOperator(string(c.Operator), c.GetValue())
	if err != nil {
		return nil, false, nil
	}
	exact, err := o.exact()
	if err != nil {
		return nil, false, nil
	}
	out := map[ir.Operation]bool{}
	for _, op := range []ir.Operation{ir.Create, ir.Update, ir.Delete, ir.Connect} {
		got, err := evalBool(exact, "x", string(op))
		if err != nil {
			return nil, false, nil
		}
		out[op] = got
	}
	return out, true, nil
}

// Message is a message with {{ }} variables as Kyverno substitutes them
// (a string as itself, a number or boolean as its JSON text), each
// variable a field the schema fixes as a string, an integer or a
// boolean. A strict read of a missing field fails the expression, and the
// policy's static message is used, as Kyverno falls back to the message
// as written when substitution fails.
func (t *Translator) Message(text string, roots Roots) (celbuild.Expr, error) {
	t.readsImages = false
	m, err := t.message(text, roots)
	if err != nil || !t.ReadsImages() {
		return m, err
	}
	// Images that do not parse fail the substitution.
	return t.b.Ternary(t.imagesParse(), m, t.b.String("")), nil
}

func (t *Translator) message(text string, roots Roots) (celbuild.Expr, error) {
	t.nullData = true
	defer func() { t.nullData = false }()
	if strings.Contains(text, `\{{`) {
		return nil, notTyped("an escaped {{ in the message")
	}
	var out celbuild.Expr
	pending := ""
	flush := func() {
		if pending == "" {
			return
		}
		if out == nil {
			out = t.b.String(pending)
		} else {
			out = t.b.Add(out, t.b.String(pending))
		}
		pending = ""
	}
	add := func(e celbuild.Expr) {
		if s, ok := celbuild.StringLit(e); ok {
			// Text next to text is one literal.
			pending += s
			return
		}
		flush()
		if out == nil {
			out = e
		} else {
			out = t.b.Add(out, e)
		}
	}
	names := map[string]bool{}
	rest := text
	for {
		start := strings.Index(rest, "{{")
		if start < 0 {
			break
		}
		end := strings.Index(rest[start:], "}}")
		if end < 0 {
			return nil, notTyped("an unclosed {{ in the message")
		}
		end += start + 2
		q, ok := wholeVariable(rest[start:end])
		if !ok {
			return nil, notTyped("the variable %s in the message", rest[start:end])
		}
		v, err := t.query(q, roots, names)
		if err != nil {
			return nil, err
		}
		e, err := t.messageText(v)
		if err != nil {
			return nil, err
		}
		if start > 0 {
			add(t.b.String(rest[:start]))
		}
		add(e)
		rest = rest[end:]
	}
	if rest != "" {
		add(t.b.String(rest))
	}
	flush()
	if out == nil {
		return t.b.String(""), nil
	}
	return out, nil
}

// messageText is the text Kyverno writes for a value in a message.
func (t *Translator) messageText(v qval) (celbuild.Expr, error) {
	var value celbuild.Expr
	var shape kubeschema.Shape
	switch v.kind {
	case qList:
		return t.listText(v.list)
	case qLit:
		text, ok := literalText(v.lit)
		if !ok || v.lit == nil {
			return nil, notTyped("a message variable that is null")
		}
		return t.b.String(text), nil
	case qScalar:
		value, shape = v.scalar.expr, v.scalar.shape
	case qPath:
		p := v.path
		shape = p.shape()
		switch {
		case p.strict && p.nullableData:
			// A ConfigMap without data: Kyverno writes null.
			if shape != kubeschema.String {
				return nil, notTyped("a message variable of a ConfigMap that is not a string")
			}
			return t.b.Ternary(t.b.Has(p.root, p.keys[0]), p.expr(t.b), t.b.String("null")), nil
		case p.strict:
			value = p.expr(t.b)
		case p.hasDflt && shape == kubeschema.String && p.dflt == "":
			opt, _ := p.optional(t.b)
			value = t.b.OrValue(opt, t.b.String(""))
		case !p.hasDflt && p.present(t.b) == nil:
			value = p.expr(t.b)
		default:
			return nil, notTyped("a message variable that may be null")
		}
	default:
		return nil, notTyped("a message variable of this kind")
	}
	switch shape {
	case kubeschema.String:
		return value, nil
	case kubeschema.Integer, kubeschema.Boolean:
		return t.b.Call("string", value), nil
	}
	return nil, notTyped("a message variable of shape %s", shape)
}

// listText is the text Kyverno writes for a projection of strings in a
// message, encoding/json's: ["a","b"], null where the projection is. A
// string is quoted with the standard library's escapes; one the API
// server keeps to letters, digits, '-', '_' and '.' (a name, a label's
// value) needs none, and one with a control character raises an error,
// as in the exact form (the message falls back to the rule's text).
func (t *Translator) listText(l *qlist) (celbuild.Expr, error) {
	if len(l.gens) != 1 || l.mayErr {
		return nil, notTyped("a message list of nested lists, or one whose filter may fail")
	}
	g, elem := l.gens[0], l.elem
	var s, present celbuild.Expr
	safe := false
	switch {
	case elem.kind == qPath && elem.path.shape() == kubeschema.String && !elem.path.hasDflt:
		s, present, safe = elem.path.expr(t.b), elem.path.present(t.b), elem.path.jsonSafe
	case elem.kind == qScalar && elem.scalar.shape == kubeschema.String && !elem.scalar.mayErr:
		s = elem.scalar.expr
	default:
		return nil, notTyped("a message list of values that are not strings")
	}
	quoted := t.b.Add(t.b.Add(t.b.String(`"`), s), t.b.String(`"`))
	if !safe {
		escaped := s
		for _, r := range [][2]string{{`\`, `\\`}, {`"`, `\"`}, {"<", `\u003c`}, {">", `\u003e`}, {"&", `\u0026`}} {
			escaped = t.b.Member("replace", escaped, t.b.String(r[0]), t.b.String(r[1]))
		}
		control := t.b.Member("matches", s, t.b.String(`[\x00-\x1f\x{2028}\x{2029}]`))
		fails := t.b.Index(t.b.MapLiteral(), t.b.String("admitc does not write this value as JSON text in CEL"))
		quoted = t.b.Ternary(control, fails, t.b.Add(t.b.Add(t.b.String(`"`), escaped), t.b.String(`"`)))
	}
	keep := g.filter
	if present != nil {
		keep = t.b.And(keep, present)
	}
	src := g.src
	if keep != nil {
		src = t.b.Filter(src, g.v, keep)
	}
	texts := t.b.Member("join", t.b.Map(src, g.v, quoted), t.b.String(","))
	text := t.b.Add(t.b.Add(t.b.String("["), texts), t.b.String("]"))
	if l.null != nil {
		return t.b.Ternary(l.null, t.b.String("null"), text), nil
	}
	return text, nil
}

// strictReadErr records where the condition's strict read p of its key
// fails, and Kyverno's error there ("Unknown key"), when exactly one key
// of p may be missing (with more, which one is missing names the error).
func (t *Translator) strictReadErr(p *qpath) {
	t.errs = nil
	var missing []string
	for i, k := range p.keys {
		if !p.always[i] {
			missing = append(missing, k)
		}
	}
	if len(missing) != 1 || t.errVar == "" {
		return
	}
	t.errs = negate(t.b, p.present(t.b))
	t.errText = "failed to substitute variables in condition key: failed to resolve " + t.errVar + " at path : JMESPath query failed: Unknown key \"" + missing[0] + "\" in path"
}
