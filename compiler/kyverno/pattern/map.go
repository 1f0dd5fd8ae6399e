package pattern

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// mapPattern is validateMap on the resource value x (a variable). Kyverno
// evaluates the anchors first (conditional anchors sort first: one not
// satisfied skips the map and silences the other anchors' failures), then
// global anchors and plain keys in getSortedNestedAnchorResource's order,
// stopping at the first error.
func (t *translator) mapPattern(p map[string]any, x string, path kpath, fp *field.Path, c context) (string, error) {
	if err := checkMapKeys(p, fp, c, t.listDepth); err != nil {
		return "", err
	}
	var conds, others []string
	for _, k := range phaseOneOrder(p) {
		out, err := t.keyed(k, p[k.raw], x, path, fp.Child(k.raw), c)
		if err != nil {
			return "", err
		}
		if k.kind == conditionAnchor {
			conds = append(conds, out)
		} else {
			others = append(others, out)
		}
	}
	var plain []string
	for _, k := range phaseTwoOrder(p) {
		out, err := t.keyed(k, p[k.raw], x, path, fp.Child(k.raw), c)
		if err != nil {
			return "", err
		}
		plain = append(plain, out)
	}
	body := t.anchorPhase(others, len(conds), firstNotPass(plain))
	if len(conds) > 0 {
		body = "[" + strings.Join(conds, ", ") + "].all(r, r == 'pass') ? " + body + " : 'skip'"
	}
	return "type(" + x + ") == map ? " + body + " : " + path.result("fail"), nil
}

// anchorPhase folds the equality, negation and existence anchors' outcomes
// rs in Kyverno's order: a raw anchor skip ends in 'skip'; a failure before
// it is returned; at the end, the map skips when nothing applied (no
// conditional anchor and every anchor skipped); otherwise the plain keys
// decide.
func (t *translator) anchorPhase(rs []string, conds int, next string) string {
	if len(rs) == 0 {
		return next
	}
	r := t.fresh()
	end := next
	if conds == 0 {
		end = r + ".all(o, o == 'skip') ? 'skip' : " + next
	}
	fold := end
	for i := len(rs) - 1; i >= 0; i-- {
		ri := r + "[" + strconv.Itoa(i) + "]"
		fold = ri + " == '" + wordSkipAnchor + "' ? 'skip' : " + ri + ".startsWith('fail') ? " + ri + " : (" + fold + ")"
	}
	return bind(r, "["+strings.Join(rs, ", ")+"]", fold)
}

// keyed is the outcome of one pattern map key's handler
// (anchor.CreateElementHandler) on the resource map x.
func (t *translator) keyed(k mapKey, pv any, x string, path kpath, fp *field.Path, c context) (string, error) {
	child := context{}
	if k.key == "metadata" {
		child.underMetadata = true
	}
	if c.underMetadata && (k.key == "labels" || k.key == "annotations") {
		child.expandKeys = true
	}
	if c.expandKeys && strings.ContainsAny(k.key, "*?") {
		return t.expandedKey(k, pv, x, path, fp, child)
	}
	return t.handler(k, pv, x, quote(k.key), path.key(k.key), path, fp, child)
}

// handler renders one key's handler with the resource key given as the CEL
// expression kx and the key's path kp.
func (t *translator) handler(k mapKey, pv any, x, kx string, kp, path kpath, fp *field.Path, c context) (string, error) {
	present := kx + " in " + x
	value := x + "[" + kx + "]"
	switch k.kind {
	case noAnchor:
		if s, ok := pv.(string); ok && s == "*" {
			return "(" + present + " && " + value + " != null) ? 'pass' : " + path.result("fail"), nil
		}
		return t.element(pv, "dyn("+x+"[?"+kx+"].orValue(null))", kp, fp, c)
	case negationAnchor:
		return present + " ? " + kp.result(wordNegation) + " : 'pass'", nil
	case existenceAnchor:
		return t.existence(pv, x, kx, kp, fp)
	}
	out, err := t.element(pv, value, kp, fp, c)
	if err != nil {
		return "", err
	}
	switch k.kind {
	case conditionAnchor:
		return present + " ? (" + out + " == 'pass' ? 'pass' : '" + wordSkipAnchor + "') : '" + wordSkipAnchor + "'", nil
	case globalAnchor:
		return present + " ? (" + out + " == 'pass' ? 'pass' : '" + wordSkipAnchor + "') : 'pass'", nil
	case equalityAnchor:
		return present + " ? " + out + " : 'pass'", nil
	}
	return "", errorf(fp, "the add anchor +() is not allowed in validate patterns")
}

// existence is the ^(k) handler: when the key is present its value must be
// a list in which every pattern map matches at least one element.
func (t *translator) existence(pv any, x, kx string, kp kpath, fp *field.Path) (string, error) {
	present := kx + " in " + x
	fail := kp.result("fail")
	maps, ok := pv.([]any)
	if !ok {
		return present + " ? " + fail + " : 'pass'", nil
	}
	var tests []string
	for i, m := range maps {
		pm, ok := m.(map[string]any)
		if !ok {
			return present + " ? " + fail + " : 'pass'", nil
		}
		idx, e := t.fresh(), t.fresh()
		t.listDepth++
		out, err := t.mapPattern(pm, e, kp.index(idx), fp.Index(i), context{})
		t.listDepth--
		if err != nil {
			return "", err
		}
		tests = append(tests, x+"["+kx+"].exists("+idx+", "+e+", "+out+" == 'pass')")
	}
	if len(tests) == 0 {
		return "'pass'", nil
	}
	value := x + "[" + kx + "]"
	return present + " ? (type(" + value + ") == list && " + strings.Join(tests, " && ") + " ? 'pass' : " + fail + ") : 'pass'", nil
}

// expandedKey is a key with wildcards in a labels or annotations map:
// Kyverno replaces it by a resource key that matches it and holds a string
// (if several match it picks one at random; the translation requires all of
// them to pass), and keeps it literally when none does.
func (t *translator) expandedKey(k mapKey, pv any, x string, path kpath, fp *field.Path, c context) (string, error) {
	y := t.fresh()
	literal, err := t.handler(k, pv, x, quote(k.key), path.key(k.key), path, fp, c)
	if err != nil {
		return "", err
	}
	expanded, err := t.handler(k, pv, x, y, path.add(y, false).add("/", true), path, fp, c)
	if err != nil {
		return "", err
	}
	match := "type(" + x + "[" + y + "]) == string && " + wildcardMatch(k.key, y)
	matched := x + ".filter(" + y + ", " + match + ")"
	agg := bind("rs", matched+".map("+y+", "+expanded+")", "(rs.filter(r, r != 'pass') + ['pass'])[0]")
	return x + ".exists(" + y + ", " + match + ") ? " + agg + " : " + literal, nil
}

// checkMapKeys refuses the map keys whose Kyverno semantics the translation
// does not reproduce.
func checkMapKeys(p map[string]any, fp *field.Path, c context, listDepth int) error {
	seen := map[string]string{}
	for raw, v := range p {
		k := parseKey(raw)
		if k.kind == addAnchor {
			return errorf(fp.Child(raw), "the add anchor +() is not allowed in validate patterns")
		}
		if (k.key == "metadata" || c.underMetadata && (k.key == "labels" || k.key == "annotations")) && seen[k.key] != "" {
			return errorf(fp.Child(raw), "both %q and %q: Kyverno expands wildcards under one of them at random", seen[k.key], raw)
		}
		seen[k.key] = raw
		if !c.expandKeys {
			continue
		}
		if _, ok := v.(string); !ok {
			return errorf(fp.Child(raw), "a %T value in a labels or annotations pattern: Kyverno drops non-string values there when the resource has the map", v)
		}
		if listDepth > 0 && strings.ContainsAny(k.key, "*?") {
			return errorf(fp.Child(raw), "a wildcard key in a labels or annotations pattern inside a list: Kyverno rewrites the pattern for the first element and keeps the rewrite for the next")
		}
	}
	return nil
}
