package typed

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/google/cel-go/common/ast"

	"github.com/admitc/admitc/compiler/kyverno/pattern"
	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
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
	t.values = map[string]celbuild.Expr{}
	var out []PatternValue
	names := map[string]bool{}
	for _, vt := range texts {
		e, err := t.patternValue(vt.Text, roots)
		if err != nil {
			return nil, err
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
func (w *walk) dynamicKey(text string, v celbuild.Expr, key string, child kubeschema.Node, known, present bool, path, cpath kpath) (check, error) {
	s, ok := w.t.values[text]
	if !ok {
		return check{}, notTyped("the pattern value %q", text)
	}
	if known && child.Shape() != kubeschema.String {
		return check{}, notTyped("the pattern value %q on a field that is not a string", text)
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
