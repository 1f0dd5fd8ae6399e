package pattern

import (
	"regexp"
	"sort"
	"strings"
)

// anchorKind is the modifier of a pattern map key, as Kyverno's
// pkg/engine/anchor parses it.
type anchorKind string

const (
	noAnchor        anchorKind = "none"
	conditionAnchor anchorKind = ""
	globalAnchor    anchorKind = "<"
	negationAnchor  anchorKind = "X"
	addAnchor       anchorKind = "+"
	equalityAnchor  anchorKind = "="
	existenceAnchor anchorKind = "^"
)

var anchorRegex = regexp.MustCompile(`^(?P<modifier>[+<=X^])?\((?P<key>.+)\)$`)

// mapKey is one key of a pattern map: its anchor kind and the resource key
// it names.
type mapKey struct {
	raw  string
	kind anchorKind
	key  string // the resource key: the anchor's key, or raw without anchor
}

// parseKey classifies a pattern map key exactly as anchor.Parse does
// (surrounding spaces are trimmed before matching).
func parseKey(raw string) mapKey {
	m := anchorRegex.FindStringSubmatch(strings.TrimSpace(raw))
	if m == nil || m[2] == "" {
		return mapKey{raw: raw, kind: noAnchor, key: raw}
	}
	return mapKey{raw: raw, kind: anchorKind(m[1]), key: m[2]}
}

// isPhaseOne reports whether Kyverno evaluates the key in validateMap's
// first phase (anchor.GetAnchorsResourcesFromMap): conditional, existence,
// equality and negation anchors. Global anchors are evaluated with the
// plain keys, in the second phase.
func (k mapKey) isPhaseOne() bool {
	switch k.kind {
	case conditionAnchor, existenceAnchor, equalityAnchor, negationAnchor:
		return true
	}
	return false
}

// phaseOneOrder is the order of validateMap's first phase: sorted by raw key.
// All conditional anchors sort first ('(' < '=' < 'X' < '^').
func phaseOneOrder(m map[string]any) []mapKey {
	var keys []mapKey
	for raw := range m {
		if k := parseKey(raw); k.isPhaseOne() {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].raw < keys[j].raw })
	return keys
}

// phaseTwoOrder is getSortedNestedAnchorResource's order: keys sorted, then
// global anchors and keys whose values hold anchors pushed to the front (so
// they come in reverse sorted order), the others appended in sorted order.
func phaseTwoOrder(m map[string]any) []mapKey {
	var raws []string
	for raw := range m {
		if !parseKey(raw).isPhaseOne() {
			raws = append(raws, raw)
		}
	}
	sort.Strings(raws)
	var front, back []mapKey
	for _, raw := range raws {
		k := parseKey(raw)
		if k.kind == globalAnchor || hasNestedAnchors(m[raw]) {
			front = append([]mapKey{k}, front...)
			continue
		}
		back = append(back, k)
	}
	return append(front, back...)
}

// hasNestedAnchors is validate.hasNestedAnchors: a map key anywhere below
// is a conditional, existence, equality, negation or global anchor.
func hasNestedAnchors(p any) bool {
	switch t := p.(type) {
	case map[string]any:
		for raw, v := range t {
			if k := parseKey(raw); k.isPhaseOne() || k.kind == globalAnchor || hasNestedAnchors(v) {
				return true
			}
		}
	case []any:
		for _, v := range t {
			if hasNestedAnchors(v) {
				return true
			}
		}
	}
	return false
}
