package typed

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"

	"github.com/admitc/admitc/compiler/kyverno/pattern"
	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// A pattern value with {{ }} variables is substituted by Kyverno before
// the pattern is matched (pattern/dynamic.go has the exact form and why).
// The typed translation takes a value that is a string (text with
// variables, or one variable the schema fixes as a string) on a key whose
// field the schema fixes as a string: the field matches the value with its
// wildcards, and a value Kyverno reads as more than text (an operator, a
// range, a quantity) raises pattern.NotReadAtAdmission.

// PatternValue is a pattern value the typed rule reads before its
// pattern: the policy variable Name holding Expr ("": Expr is a field of
// the request, written in place, which cannot fail); NotPlain is the test
// that Kyverno may read it as more than text (pattern.NotPlain), which the
// rule's validation makes before anything else, raising
// NotReadAtAdmission where it holds. Reading the variable there reads it
// first, so a value that fails to resolve fails the rule wherever the
// pattern would read it, as Kyverno's substitution does.
type PatternValue struct {
	Name     string
	Expr     celbuild.Expr
	NotPlain celbuild.Expr
}

// ValueText is a pattern value with {{ }} variables and the key whose
// value it first is (its variable is named after it).
type ValueText struct {
	Text, Key string
}

// ReadPatternValues translates the {{ }} values of the patterns
// translated next, in Kyverno's substitution order, from roots.
func (t *Translator) ReadPatternValues(texts []ValueText, roots Roots) ([]PatternValue, error) {
	t.values, t.quantityValues, t.prefixValues = map[string]celbuild.Expr{}, nil, map[string]celbuild.Expr{}
	var out []PatternValue
	names := map[string]bool{}
	for _, vt := range texts {
		e, err := t.patternValue(vt.Text, roots)
		if err != nil {
			return nil, err
		}
		if prefix, ok := t.namespacePrefix(e); ok {
			// Plain text whatever the namespace: read in place.
			t.values[vt.Text], t.prefixValues[vt.Text] = e, prefix
			out = append(out, PatternValue{Expr: e})
			continue
		}
		v := PatternValue{Expr: e}
		use := e
		if !isRequestField(e) {
			v.Name = expectedName(vt.Key, names)
			use = t.b.Select(t.b.Ident("variables"), v.Name)
		}
		notPlain, err := t.b.Parse(pattern.NotPlain("s"))
		if err != nil {
			return nil, err
		}
		v.NotPlain = t.b.Substitute(notPlain, "s", use)
		t.values[vt.Text] = use
		out = append(out, v)
	}
	return out, nil
}

// namespacePrefix says e, a pattern value, is request.namespace followed
// by text that ends with its only wildcard, a '*' ("{{ request.namespace
// }}-*"), and gives the prefix before it. A namespace is a DNS label (the
// API server's validation of namespaces; offline, an object whose
// metadata.namespace is not one is judged by the exact form), so such a
// value is always plain text to Kyverno (no operator, range, duration or
// quantity ends with '*'), and it matches a string that starts with the
// prefix: x.startsWith(request.namespace + "-").
func (t *Translator) namespacePrefix(e celbuild.Expr) (celbuild.Expr, bool) {
	if e.Kind() != ast.CallKind || e.AsCall().FunctionName() != operators.Add || len(e.AsCall().Args()) != 2 {
		return nil, false
	}
	ns, rest := e.AsCall().Args()[0], e.AsCall().Args()[1]
	lit, ok := celbuild.StringLit(rest)
	if !ok || !t.b.Same(ns, t.b.Field(t.b.Ident("request"), "namespace")) {
		return nil, false
	}
	prefix, ok := strings.CutSuffix(lit, "*")
	if !ok || prefix == "" || !safePrefix.MatchString(prefix) {
		return nil, false
	}
	t.readFormat("metadata.namespace", ir.FormatDNSLabel)
	return t.b.Add(ns, t.b.String(prefix)), true
}

// safePrefix is text with no wildcard, no | or &, no white space and no
// backslash: a namespace followed by it and '*' is plain text.
var safePrefix = regexp.MustCompile(`^[A-Za-z0-9._:/@=+-]+$`)

// isRequestField says e is request.<field>: always there, read in place.
func isRequestField(e celbuild.Expr) bool {
	if e.Kind() != ast.SelectKind || e.AsSelect().IsTestOnly() {
		return false
	}
	op := e.AsSelect().Operand()
	return op.Kind() == ast.IdentKind && op.AsIdent() == "request"
}

// expectedName names the value a pattern compares key with:
// expectedServiceAccountName, expectedInstance (app.kubernetes.io/instance).
func expectedName(key string, taken map[string]bool) string {
	if i := strings.LastIndexAny(key, "/."); i >= 0 {
		key = key[i+1:]
	}
	var b strings.Builder
	for _, r := range key {
		if r == '_' || unicode.IsLetter(r) && r < unicode.MaxASCII || unicode.IsDigit(r) && r < unicode.MaxASCII {
			if b.Len() == 0 {
				r = unicode.ToUpper(r)
			}
			b.WriteRune(r)
		}
	}
	base := "expected" + b.String()
	name := base
	for i := 2; taken[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	taken[name] = true
	return name
}

// patternValue is the string Kyverno substitutes for text.
func (t *Translator) patternValue(text string, roots Roots) (celbuild.Expr, error) {
	t.readsImages = false
	var e celbuild.Expr
	if q, ok := wholeVariable(text); ok {
		v, err := t.query(q, roots, map[string]bool{})
		if err != nil {
			return nil, err
		}
		if !stringValued(v) {
			return nil, notTyped("the pattern value %s is not a string", text)
		}
		if e, err = t.messageText(v); err != nil {
			return nil, err
		}
	} else {
		var err error
		if e, err = t.message(text, roots); err != nil {
			return nil, err
		}
	}
	if t.readsImages {
		return nil, notTyped("the pattern value %s reads the images", text)
	}
	return e, nil
}

// stringValued says the query's value is always a string.
func stringValued(v qval) bool {
	switch v.kind {
	case qPath:
		return v.path.shape() == kubeschema.String
	case qScalar:
		return v.scalar.shape == kubeschema.String
	case qLit:
		_, ok := v.lit.(string)
		return ok
	}
	return false
}

// dynamicKey is the plain key k of the map v whose pattern value is text,
// read at admission (ReadPatternValues): Kyverno's default handler, "*"
// (present) after substitution, else validateResourceElement with the
// value as a string pattern.
func (w *walk) dynamicKey(text string, v celbuild.Expr, key string, child kubeschema.Node, known, present bool, path, cpath kpath, crp string) (check, error) {
	s, ok := w.t.values[text]
	if !ok {
		return check{}, notTyped("the pattern value %q", text)
	}
	if known && child.Shape() != kubeschema.String {
		return check{}, notTyped("the pattern value %q on a field that is not a string", text)
	}
	if w.t.quantityValues[text] {
		return w.quantityKey(text, s, v, key, child, known, present, cpath, crp)
	}
	if prefix, ok := w.t.prefixValues[text]; ok {
		// Never "*": a missing key fails at the key.
		fail := func() celbuild.Expr { return cpath.expr(w.b) }
		if !known {
			return check{ok: w.b.Bool(false), fail: fail}, nil
		}
		starts := w.b.Member("startsWith", w.b.Select(v, key), prefix)
		if !present {
			starts = w.b.And(w.b.Has(v, key), starts)
		}
		return check{ok: starts, fail: fail}, nil
	}
	has := celbuild.Expr(w.b.Bool(false))
	if known {
		has = w.b.Has(v, key)
		if present {
			has = w.b.Bool(true)
		}
	}
	// The value is plain text (the validation tests it first): an absent
	// value (null) matches none; "*" fails at the map.
	test := "h && " + pattern.DynamicWildcardMatch("s", "x")
	if !known {
		test = "false"
	}
	ok2, err := w.valueExpr(test, s, has, w.b.Select(v, key))
	if err != nil {
		return check{}, err
	}
	fail, err := w.valueExpr("h || s != '*' ? c : p", s, has, nil)
	if err != nil {
		return check{}, err
	}
	return check{ok: ok2, fail: func() celbuild.Expr {
		return w.b.Substitute(w.b.Substitute(fail, "c", cpath.expr(w.b)), "p", path.expr(w.b))
	}}, nil
}

// quantityKey is the plain key k of the map v whose pattern value is s, a
// quantity as the API server writes it, read at admission
// (ReadElementValues), on a quantity field: Kyverno's validateString
// compares two such texts as durations where both are one, else as
// quantities; an absent value is "0". A quantity is a Go duration only as
// 0 or with the m suffix (a scale of at least nano), where the two
// comparisons agree. The field is read as the API server writes it too.
func (w *walk) quantityKey(text string, s, v celbuild.Expr, key string, child kubeschema.Node, known, present bool, cpath kpath, crp string) (check, error) {
	if !known || !child.Quantity() {
		return check{}, notTyped("a quantity pattern value on a field that is not a quantity")
	}
	w.t.readFormat(crp, ir.FormatCanonicalQuantity)
	x := w.b.Select(v, key)
	if !present {
		x = w.b.OrValue(w.b.OptionalSelect(v, key), w.b.String("0"))
	}
	same := w.b.Eq(w.b.Call("quantity", x), w.b.Call("quantity", s))
	return check{ok: same, fail: func() celbuild.Expr { return cpath.expr(w.b) }}, nil
}

// valueExpr is the CEL text over s (the pattern value), h (whether the
// resource has the key) and x (the resource's value) with them written in.
func (w *walk) valueExpr(text string, s, h, x celbuild.Expr) (celbuild.Expr, error) {
	e, err := w.b.Parse(text)
	if err != nil {
		return nil, err
	}
	e = w.b.Substitute(e, "s", s)
	e = w.b.Substitute(e, "h", h)
	if x != nil {
		e = w.b.Substitute(e, "x", x)
	}
	return e, nil
}

// A foreach entry's pattern value may read the element ({{
// element.resources.requests.cpu }}): Kyverno substitutes it for each
// element before matching the element, and an element whose value does
// not resolve errs (the first element that does not pass decides). Such
// values are read in place, on the element; one that is a quantity and
// is compared with a quantity field is compared as a quantity (below).

// ElementValues are a foreach entry's pattern values read on one
// element (ReadElementValues).
type ElementValues struct {
	// Errs is where the element errs before its pattern is matched (nil:
	// never): a value does not resolve, or is a quantity Kyverno reads
	// as a range.
	Errs celbuild.Expr
	// ErrText is the element's error there: Kyverno's substitution error
	// for the first value that does not resolve, else
	// pattern.NotReadAtAdmission.
	ErrText celbuild.Expr
	// Known are the fields under the element the values read, present
	// wherever the element does not err (Root.Known).
	Known []string
}

// ElementValueText is a pattern value with {{ }} variables and the JSON
// pointer of its first place in the pattern (/resources/limits/cpu),
// which Kyverno's substitution error names.
type ElementValueText struct {
	Text, Pointer string
}

// ReadElementValues reads the {{ }} values of the pattern translated next
// on the element roots.Element, each a whole variable that is a quantity
// field read strictly (and compared with quantity fields): what the
// pattern compares is that field of the element, in place.
func (t *Translator) ReadElementValues(texts []ElementValueText, roots Roots) (ElementValues, error) {
	t.values, t.quantityValues, t.prefixValues = map[string]celbuild.Expr{}, map[string]bool{}, nil
	var out ElementValues
	// The element errs at the first of these tests that holds, with its
	// text: every value is substituted before any is compared, so one
	// that does not resolve errs first; a quantity Kyverno reads as a
	// range (an exponent's minus sign, 1e-3 or 1E-3) is not compared but
	// raises admitc's error, on the first element that does not pass as
	// Kyverno's error would (offline such a quantity is judged by the
	// exact form: ir.FormatPlainQuantity).
	type erring struct{ test, text celbuild.Expr }
	var missing, notPlain []erring
	raise := t.b.String(pattern.NotReadAtAdmission)
	for _, vt := range texts {
		q, ok := wholeVariable(vt.Text)
		if !ok {
			return ElementValues{}, notTyped("the pattern value %s on each element is not one variable", vt.Text)
		}
		v, err := t.query(q, roots, map[string]bool{})
		if err != nil {
			return ElementValues{}, err
		}
		if v.kind != qPath || v.path.hasDflt || !v.path.strict || v.path.params || v.path.shape() != kubeschema.String {
			return ElementValues{}, notTyped("the pattern value %s on each element is not a string field", vt.Text)
		}
		p := v.path
		if !p.final().Quantity() {
			return ElementValues{}, notTyped("the pattern value %s on each element is not a quantity", vt.Text)
		}
		for _, sp := range p.schemaPaths() {
			t.readFormat(sp, ir.FormatPlainQuantity)
		}
		s := p.expr(t.b)
		t.values[vt.Text], t.quantityValues[vt.Text] = s, true
		if p.elem {
			for i := range p.keys {
				out.Known = append(out.Known, keyPath(p.keys[:i+1]...))
			}
		}
		if present := p.present(t.b); present != nil {
			missing = append(missing, erring{negate(t.b, present), t.substitutionError(strings.TrimSpace(q), vt.Pointer, p)})
		}
		notPlain = append(notPlain, erring{t.b.Member("matches", s, t.b.String("[eE]-")), raise})
	}
	all := append(missing, notPlain...)
	for i := len(all) - 1; i >= 0; i-- {
		if out.Errs == nil {
			out.Errs, out.ErrText = all[i].test, all[i].text
			continue
		}
		out.Errs = t.b.Or(all[i].test, out.Errs)
		out.ErrText = t.b.Ternary(all[i].test, all[i].text, out.ErrText)
	}
	return out, nil
}

// substitutionError is Kyverno's error where the strict read p of the
// variable q at pointer in the pattern does not resolve: the first key
// missing on its way is named.
func (t *Translator) substitutionError(q, pointer string, p *qpath) celbuild.Expr {
	var key celbuild.Expr
	e := p.root
	var tests []celbuild.Expr
	var keys []string
	for i, k := range p.keys {
		if !p.always[i] {
			tests = append(tests, t.b.Has(e, k))
			keys = append(keys, k)
		}
		e = t.b.Select(e, k)
	}
	for i := len(keys) - 1; i >= 0; i-- {
		if key == nil {
			key = t.b.String(keys[i])
			continue
		}
		key = t.b.Ternary(negate(t.b, tests[i]), t.b.String(keys[i]), key)
	}
	prefix := "variable substitution failed: failed to resolve " + q + " at path " + pointer + ": JMESPath query failed: Unknown key \""
	return t.b.Add(t.b.Add(t.b.String(prefix), key), t.b.String("\" in path"))
}
