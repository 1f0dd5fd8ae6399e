package mutate

import (
	"strings"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
)

// Keys with {{ }} variables. Kyverno substitutes the variables of a
// patch's map keys as it substitutes values, before its preprocessing
// reads anchors (pkg/engine/jsonutils traverseObject with
// substituteVariablesIfAny: a key that is one variable becomes the
// variable's value, which must be a string; variables inside text are
// written as strings or JSON; an escaped \{{ is unescaped). The
// translation computes each such key once, at the top of the patch (or of
// a foreach element's patch), where Kyverno substitutes the rule, and
// writes it into the JSON pointers and map values:
//
//   - a key that is one variable resolving to null: Kyverno keeps the key
//     as written, braces and all (the API server refuses it as a label or
//     annotation key); the translation fails the rule instead;
//   - a key that is empty once substituted: Kyverno's kustomize merge fails
//     ("wrong node kind"), and so does the translation;
//   - a key that holds {{ once substituted (the variable's value holds
//     it): Kyverno renames the key while it ranges over the map, so Go may
//     visit the renamed key again and substitute it again, or not; the
//     translation fails the rule;
//   - a key whose value makes it an anchor or a strategic merge directive
//     ('(name)', '+(name)', '$patch'), or that equals another key of its
//     map (Kyverno's result then depends on Go's map order): the
//     translation fails the rule;
//   - anchored keys with variables, keys with variables inside list
//     elements, and anchors or lists under such a key are refused, and so
//     are maps under such a key in a foreach entry (two elements may
//     compute the same key).

// readDynamicKey checks a key with {{ }} variables at path: what the
// translation accepts, and that its variables translate.
func (r *reader) readDynamicKey(raw string, kind keyKind, v any, path string) error {
	switch x := v.(type) {
	case []any:
		return errorf(path, "a list under a key with {{ }} variables is not translated")
	case map[string]any:
		if r.forEach {
			return errorf(path, "a map under a key with {{ }} variables in a foreach entry is not translated (two elements may compute the same key)")
		}
		if data := anchoredOrListed(x); data != "" {
			return errorf(path, "%s under a key with {{ }} variables are not translated", data)
		}
	}
	switch {
	case r.inElement:
		return errorf(path, "a key with {{ }} variables inside a list element is not translated")
	case kind != plainKey:
		return errorf(path, "an anchor on a key with {{ }} variables is not translated")
	}
	if strings.Contains(raw, `\{{`) {
		return errorf(path, "an escaped \\{{ in a key is not translated (Kyverno renames the key while it walks the map, and may substitute the renamed key again)")
	}
	if _, err := conditions.Value(raw, r.scope, new(int)); err != nil {
		return errorf(path, "%v", err)
	}
	return nil
}

// anchoredOrListed names what a map under a key with variables holds that
// is not translated there: anchors or lists, or "".
func anchoredOrListed(m map[string]any) string {
	for k, v := range m {
		if kind, _, ok := parseKey(k); kind != plainKey || !ok {
			return "anchors"
		}
		switch x := v.(type) {
		case []any:
			return "lists"
		case map[string]any:
			if s := anchoredOrListed(x); s != "" {
				return s
			}
		}
	}
	return ""
}

// isDynamic says the key of f holds {{ }} variables (or an escaped \{{).
func (f *field) isDynamic() bool { return strings.Contains(f.raw, "{{") }

// keyRegex is Kyverno's anchor.regex: what makes a key an anchor.
const keyRegex = `^[+<=X^]?\(.+\)$`

// keyBindings are the keys with variables of a patch, computed before
// the patch as Kyverno substitutes them before it patches: each key's
// name and CEL (defs), and the CEL bools saying two keys of a map are the
// same once substituted (collisions).
type keyBindings struct {
	defs       [][2]string
	collisions []string
}

// wrap evaluates the substituted keys before expr, a CEL list of
// JSONPatch, and fails where two keys of a map are one.
func (k keyBindings) wrap(expr string) string {
	if len(k.collisions) > 0 {
		expr = "(" + strings.Join(k.collisions, " || ") + ") ? " + raiseList("two keys of a map are the same once their variables are substituted (Kyverno's result then depends on Go's map order); not translated") + " : " + paren(expr)
	}
	for i := len(k.defs) - 1; i >= 0; i-- {
		expr = bind(k.defs[i][0], k.defs[i][1], expr)
	}
	return expr
}

// keyCEL is the CEL of f's key: its literal, or the name its substituted
// value is bound to (keyBindings.wrap binds it).
func (w *walker) keyCEL(f *field) (string, error) {
	if !f.isDynamic() {
		return quote(f.name), nil
	}
	if n, ok := w.keyNames[f]; ok {
		return n, nil
	}
	v, err := conditions.Value(f.raw, w.scope, &w.fresh)
	if err != nil {
		return "", errorf(f.path, "%v", err)
	}
	n := w.name("key")
	if w.keyNames == nil {
		w.keyNames = map[*field]string{}
	}
	w.keyNames[f] = n
	w.keys.defs = append(w.keys.defs, [2]string{n, w.substitutedKey(v)})
	return n, nil
}

// substitutedKey is the key Kyverno's traversal makes of v, the CEL of
// the key's text with its variables substituted: a string that is not
// empty, holds no {{, and is not an anchor or a directive; otherwise an
// evaluation error (the messages below).
func (w *walker) substitutedKey(v string) string {
	kv := w.name("kv")
	checks := kv + " == null ? " + raise(keyIsNull) + " : type(" + kv + ") != string ? " + raise(keyNotString) + " : "
	checks += kv + " == '' ? " + raise(keyIsEmpty) + " : " + kv + ".matches('[{]{2}') ? " + raise(keyHoldsBraces) + " : "
	checks += kv + ".matches(" + quote(keyRegex) + ") || " + kv + ".startsWith('$') ? " + raise(keyIsAnchor) + " : " + kv
	return bind(kv, "dyn("+v+")", checks)
}

// The evaluation errors of a substituted key. No CEL of the translation
// holds "{{" (TestNoKyvernoVariableIsEmittedAsText): the checks and
// messages name the braces otherwise.
const (
	keyIsNull      = "a key that is one variable resolves to null: Kyverno keeps it as written; not translated"
	keyNotString   = "expected string after substituting variables in a key"
	keyIsEmpty     = "failed to patch resource: a key is empty once its variables are substituted (kustomize's merge fails on it)"
	keyHoldsBraces = "a key holds two opening braces once its variables are substituted: Kyverno may substitute it again as it walks the map (in Go's map order); not translated"
	keyIsAnchor    = "a key becomes an anchor or a strategic merge directive once its variables are substituted; not translated"
)

// child is the place of f's value in the map at a.
func (w *walker) child(a at, f *field) (at, error) {
	k, err := w.keyCEL(f)
	if err != nil {
		return at{}, err
	}
	return a.childExpr(k), nil
}

// pointerTo is the pointer of f's value under p.
func (w *walker) pointerTo(p pointer, f *field) (pointer, error) {
	if !f.isDynamic() {
		return p.key(f.name), nil
	}
	k, err := w.keyCEL(f)
	if err != nil {
		return pointer{}, err
	}
	return p.keyExpr(k), nil
}

// siblingCheck records, once per map, that the keys of n must differ
// once substituted (conditions are left out: Kyverno's preprocessing
// deletes them from the patch).
func (w *walker) siblingCheck(n *mapNode) error {
	var statics, dynamics []string
	for _, f := range n.fields {
		if f.kind == condKey || f.kind == globalKey {
			continue
		}
		if !f.isDynamic() {
			statics = append(statics, quote(f.name))
			continue
		}
		k, err := w.keyCEL(f)
		if err != nil {
			return err
		}
		dynamics = append(dynamics, k)
	}
	if len(dynamics)+len(statics) < 2 || len(dynamics) == 0 || w.checked[n] {
		return nil
	}
	if w.checked == nil {
		w.checked = map[*mapNode]bool{}
	}
	w.checked[n] = true
	ks, i, j := w.name("ks"), w.name("i"), w.name("j")
	w.keys.collisions = append(w.keys.collisions, bind(ks, "["+strings.Join(dynamics, ", ")+"]",
		"lists.range(size("+ks+")).exists("+i+", "+ks+"["+i+"] in ["+strings.Join(statics, ", ")+"] || "+ks+"["+i+"] in lists.range("+i+").map("+j+", "+ks+"["+j+"]))"))
	return nil
}

// hasDynamicKeys says whether n or a map under it has a key with
// variables.
func hasDynamicKeys(n *mapNode) bool {
	for _, f := range n.fields {
		if f.isDynamic() || f.child != nil && hasDynamicKeys(f.child) {
			return true
		}
	}
	return false
}
