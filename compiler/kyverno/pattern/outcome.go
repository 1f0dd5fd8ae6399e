package pattern

import (
	"sort"
	"strconv"
	"strings"
)

// Outcome strings inside the tree. Kyverno's MatchPattern turns a failure
// into an engine error when a conditional or existence anchor key was looked
// for but never found in the maps it visited before failing
// (AnchorMap.KeysAreMissing). When a pattern has such anchors, every outcome
// carries, after a tab, what was looked for until Kyverno stopped: per
// anchor key one letter, lower case when a visited map lacked the key, upper
// case when it had it ("fail /spec/\taB"). Without such anchors outcomes
// carry nothing after the word and path.

// trackedKeys numbers the conditional and existence anchor keys of p, by raw
// key, in sorted order.
func trackedKeys(p any) map[string]int {
	seen := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for raw, e := range t {
				if k := parseKey(raw); k.kind == conditionAnchor || k.kind == existenceAnchor {
					seen[raw] = true
				}
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(p)
	if len(seen) == 0 {
		return nil
	}
	raws := make([]string, 0, len(seen))
	for raw := range seen {
		raws = append(raws, raw)
	}
	sort.Strings(raws)
	out := map[string]int{}
	for i, raw := range raws {
		out[raw] = i
	}
	return out
}

// tab ends the word and path of an outcome when observations follow.
func (t *translator) tab() string {
	if t.tracked != nil {
		return "\t"
	}
	return ""
}

// word renders an outcome without path: 'pass' (or 'pass\t').
func (t *translator) word(w string) string { return quote(w + t.tab()) }

// at renders an outcome with a path: 'fail /spec/' (or 'fail /spec/\t').
func (t *translator) at(p kpath, w string) string { return p.add(t.tab(), true).result(w) }

// obsOf is the observations part of the outcome r ("" untracked).
func (t *translator) obsOf(r string) string {
	if t.tracked == nil {
		return ""
	}
	return r + ".substring(" + r + ".indexOf('\\t') + 1)"
}

// obsAll concatenates the observations of the outcome list l.
func (t *translator) obsAll(l string) string {
	if t.tracked == nil {
		return ""
	}
	return l + ".map(o, " + t.obsOf("o") + ").join('')"
}

// plus appends observation expressions to an outcome expression.
func plus(out string, obs ...string) string {
	for _, o := range obs {
		if o != "" {
			out += " + " + o
		}
	}
	return out
}

// ownObservations is what CheckAnchorInResource records for the map x
// against pattern map p. In a labels or annotations map Kyverno has
// already replaced a wildcard key by a matching resource key, which is
// present by construction; only an unmatched key is looked up literally.
func (t *translator) ownObservations(p map[string]any, x string, c context) string {
	if t.tracked == nil {
		return ""
	}
	var raws []string
	for raw := range p {
		if _, ok := t.tracked[raw]; ok {
			raws = append(raws, raw)
		}
	}
	sort.Strings(raws)
	var parts []string
	for _, raw := range raws {
		i := t.tracked[raw]
		lower, upper := string(rune('a'+i)), string(rune('A'+i))
		key := parseKey(raw).key
		lookup := "(" + quote(key) + " in " + x + " ? '" + upper + "' : '" + lower + "')"
		if c.expandKeys && strings.ContainsAny(key, "*?") {
			y := t.fresh()
			lookup = "(" + x + ".exists(" + y + ", type(" + x + "[" + y + "]) == string && " + wildcardMatch(key, y) + ") ? '' : " + lookup + ")"
		}
		parts = append(parts, lookup)
	}
	return strings.Join(parts, " + ")
}

// finish turns the tree's outcome into 'pass', 'skip', 'fail <path>' or
// 'error <path>'.
func (t *translator) finish(out string) string {
	neg := strconv.Itoa(len(wordNegation) + 1)
	if t.tracked == nil {
		return bind("r", out, "r.startsWith('skip') ? 'skip' : r.startsWith('"+wordNegation+" ') ? 'fail ' + r.substring("+neg+") : r")
	}
	var missing []string
	for i := 0; i < len(t.tracked); i++ {
		missing = append(missing, "(s.contains('"+string(rune('a'+i))+"') && !s.contains('"+string(rune('A'+i))+"'))")
	}
	pathFrom := func(n string) string { return "r.substring(" + n + ", r.indexOf('\\t'))" }
	keysMissing := bind("s", t.obsOf("r"), strings.Join(missing, " || "))
	return bind("r", out, "r.startsWith('skip') ? 'skip' : r.startsWith('pass') ? 'pass' : r.startsWith('"+wordNegation+" ') ? 'fail ' + "+pathFrom(neg)+
		" : "+keysMissing+" ? 'error ' + "+pathFrom("5")+" : 'fail ' + "+pathFrom("5"))
}
