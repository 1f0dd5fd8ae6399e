package typed

import "regexp"

// anchorKind is the kind of a pattern key's anchor (Kyverno's
// anchor.Parse: a modifier before a parenthesised key).
type anchorKind string

const (
	anchorNone      anchorKind = ""
	anchorCondition anchorKind = "conditional"
	anchorGlobal    anchorKind = "global"
	anchorEquality  anchorKind = "equality"
	anchorNegation  anchorKind = "negation"
	anchorExistence anchorKind = "existence"
	anchorAdd       anchorKind = "add-if-not-present"
)

type anchor struct {
	kind anchorKind
	key  string
}

var anchorRegex = regexp.MustCompile(`^(?P<modifier>[+<=X^])?\((?P<key>.+)\)$`)

var modifiers = map[string]anchorKind{"": anchorCondition, "<": anchorGlobal, "=": anchorEquality, "X": anchorNegation, "^": anchorExistence, "+": anchorAdd}

// anchorOf parses a pattern key; a key without an anchor is its own key.
func anchorOf(k string) anchor {
	m := anchorRegex.FindStringSubmatch(k)
	if m == nil {
		return anchor{key: k}
	}
	return anchor{kind: modifiers[m[1]], key: m[2]}
}
