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
	body := t.anchorPhase(others, conds, t.plainPhase(plain))
	return ternary("type("+x+") == map", plus(body, t.ownObservations(p, x, c)), t.at(path, "fail")), nil
}

// anchorPhase evaluates the conditional anchors' outcomes conds and folds
// the other anchors' outcomes rs in Kyverno's order: a conditional anchor
// not satisfied, or a raw anchor skip, ends in 'skip' (every anchor was
// evaluated); a failure before it is returned; at the end the map skips
// when nothing applied (no conditional anchor and every anchor skipped);
// otherwise the plain keys decide.
func (t *translator) anchorPhase(rs, conds []string, next string) string {
	if len(rs) == 0 && len(conds) == 0 {
		return next
	}
	r, cs := t.fresh(), t.fresh()
	rsObs, csObs := t.obsAll(r), t.obsAll(cs)
	if len(rs) == 0 {
		rsObs = ""
	}
	if len(conds) == 0 {
		csObs = ""
	}
	skipAll := plus(t.word("skip"), rsObs, csObs)
	fold := next
	if len(rs) > 0 {
		fold = plus(next, rsObs)
		if len(conds) == 0 {
			fold = ternary(r+".all(o, o.startsWith('skip'))", plus(t.word("skip"), rsObs), fold)
		}
	}
	for i := len(rs) - 1; i >= 0; i-- {
		ri := r + "[" + strconv.Itoa(i) + "]"
		var before []string
		for j := 0; j < i; j++ {
			before = append(before, t.obsOf(r+"["+strconv.Itoa(j)+"]"))
		}
		fold = ri + ".startsWith('" + wordSkipAnchor + "') ? " + skipAll + " : " + ri + ".startsWith('fail') ? " + plus(ri, before...) + " : (" + fold + ")"
	}
	body := fold
	if len(conds) > 0 {
		body = ternary(cs+".all(o, o.startsWith('pass'))", plus("("+fold+")", csObs), skipAll)
		body = bind(cs, "["+strings.Join(conds, ", ")+"]", body)
	}
	if len(rs) == 0 {
		return body
	}
	return bind(r, "["+strings.Join(rs, ", ")+"]", body)
}

// plainPhase is the first outcome of ps that is not a pass (with what the
// passes before it observed), or a pass.
func (t *translator) plainPhase(ps []string) string {
	if t.tracked == nil {
		return firstNotPass(ps)
	}
	if len(ps) == 0 {
		return t.word("pass")
	}
	p := t.fresh()
	var obs []string
	for i := range ps {
		obs = append(obs, t.obsOf(p+"["+strconv.Itoa(i)+"]"))
	}
	fold := plus(t.word("pass"), obs...)
	for i := len(ps) - 1; i >= 0; i-- {
		pi := p + "[" + strconv.Itoa(i) + "]"
		fold = "!" + pi + ".startsWith('pass') ? " + plus(pi, obs[:i]...) + " : (" + fold + ")"
	}
	return bind(p, "["+strings.Join(ps, ", ")+"]", fold)
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
	if s, err := t.dynamicValue(pv, fp); err != nil || s != "" && c.expandKeys {
		if err != nil {
			return "", err
		}
		// Kyverno's ExpandInMetadata keeps only the string values of a
		// labels or annotations pattern (the resource's map is present
		// here): a key whose value substitutes to anything else is dropped.
		if k.kind != noAnchor {
			return "", errorf(fp, "a {{ }} value of the anchored key %s in a labels or annotations pattern is not translated (Kyverno drops the key when the value is not a string)", k.key)
		}
		out, err := t.handler(k, pv, x, quote(k.key), path.key(k.key), path, fp, child)
		return ternary("type("+s+") != string", t.word("pass"), "("+out+")"), err
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
		star := "(" + present + " && " + value + " != null) ? " + t.word("pass") + " : " + t.at(path, "fail")
		if s, ok := pv.(string); ok && s == "*" {
			return star, nil
		}
		out, err := t.element(pv, "dyn("+x+"[?"+kx+"].orValue(null))", kp, fp, c)
		if err != nil {
			return "", err
		}
		// Kyverno's defaultHandler tests for "*" after substitution too.
		if s, err := t.dynamicValue(pv, fp); err != nil || s != "" {
			return ternary("dyn("+s+") == '*'", "("+star+")", out), err
		}
		return out, nil
	case negationAnchor:
		return present + " ? " + t.at(kp, wordNegation) + " : " + t.word("pass"), nil
	case existenceAnchor:
		return t.existence(pv, x, kx, kp, fp)
	case addAnchor:
		return "", errorf(fp, "the add anchor +() is not allowed in validate patterns")
	}
	out, err := t.element(pv, value, kp, fp, c)
	if err != nil {
		return "", err
	}
	switch k.kind {
	case conditionAnchor:
		return ternary(present, t.anchorSkip(out), t.word(wordSkipAnchor)), nil
	case globalAnchor:
		return ternary(present, t.anchorSkip(out), t.word("pass")), nil
	}
	return ternary(present, out, t.word("pass")), nil
}

// anchorSkip turns any outcome but a pass into a raw anchor skip.
func (t *translator) anchorSkip(out string) string {
	o := t.fresh()
	return bind(o, out, plus("("+o+".startsWith('pass') ? "+t.word("pass")+" : "+t.word(wordSkipAnchor)+")", t.obsOf(o)))
}

// existence is the ^(k) handler: when the key is present its value must be
// a list in which every pattern map matches at least one element; Kyverno
// tries the elements in order until one matches, and stops at the first
// pattern map none matches.
func (t *translator) existence(pv any, x, kx string, kp kpath, fp *field.Path) (string, error) {
	present := kx + " in " + x
	value := x + "[" + kx + "]"
	fail := t.at(kp, "fail")
	maps, ok := pv.([]any)
	if !ok {
		return "", errorf(fp, "an existence anchor needs a list of maps, not %T", pv)
	}
	type tried struct{ k, obs string }
	var steps []tried
	var binds [][2]string
	for i, m := range maps {
		pm, ok := m.(map[string]any)
		if !ok {
			return "", errorf(fp.Index(i), "an existence anchor needs a list of maps, not a list holding %T", m)
		}
		idx, e := t.fresh(), t.fresh()
		t.listDepth++
		out, err := t.mapPattern(pm, e, kp.index(idx), fp.Index(i), context{})
		t.listDepth--
		if err != nil {
			return "", err
		}
		os, k := t.fresh(), t.fresh()
		binds = append(binds, [2]string{os, value + ".transformList(" + idx + ", " + e + ", " + out + ")"},
			[2]string{k, os + ".map(o, o.startsWith('pass')).indexOf(true)"})
		obs := ""
		if t.tracked != nil {
			obs = "(" + k + " < 0 ? " + t.obsAll(os) + " : " + os + ".transformList(i, o, i <= " + k + " ? " + t.obsOf("o") + " : '').join(''))"
		}
		steps = append(steps, tried{k: k, obs: obs})
	}
	if len(steps) == 0 {
		return t.word("pass"), nil
	}
	var seen []string
	for _, s := range steps {
		seen = append(seen, s.obs)
	}
	chain := plus(t.word("pass"), seen...)
	for i := len(steps) - 1; i >= 0; i-- {
		chain = steps[i].k + " < 0 ? " + plus(fail, seen[:i+1]...) + " : (" + chain + ")"
	}
	for i := len(binds) - 1; i >= 0; i-- {
		chain = bind(binds[i][0], binds[i][1], chain)
	}
	return present + " ? (type(" + value + ") == list ? " + chain + " : " + fail + ") : " + t.word("pass"), nil
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
	agg := bind("rs", matched+".map("+y+", "+expanded+")", "(rs.filter(r, !r.startsWith('pass')) + ["+t.word("pass")+"])[0]")
	return ternary(x+".exists("+y+", "+match+")", agg, literal), nil
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
		if strings.Contains(raw, "\t") {
			return errorf(fp.Child(raw), "a tab in a pattern key is not translated")
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
