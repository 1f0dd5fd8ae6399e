package conditions

import (
	"strconv"
	"strings"

	"github.com/admitc/admitc/internal/celenv"
)

// quote renders s as a CEL string literal.
func quote(s string) string { return celenv.Quote(s) }

// bind evaluates body with name bound to value once (the API server's CEL
// has no cel.bind): a one-element list and map() stand in for it.
func bind(name, value, body string) string {
	if isIdent(value) {
		return substituteIdent(body, name, value)
	}
	return "[" + value + "].map(" + name + ", " + body + ")[0]"
}

// isIdent says whether e is a plain CEL identifier or a selection of
// identifiers, which can be repeated without cost.
func isIdent(e string) bool {
	if e == "" {
		return false
	}
	for _, r := range e {
		if !(r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return !(e[0] >= '0' && e[0] <= '9')
}

// substituteIdent replaces the identifier name in body by value; names are
// fresh (x0, x1, ...) so a textual replacement on word boundaries is exact.
func substituteIdent(body, name, value string) string {
	var b strings.Builder
	for i := 0; i < len(body); {
		if strings.HasPrefix(body[i:], name) && !identByte(body, i-1) && !identByte(body, i+len(name)) && !inString(body, i) {
			b.WriteString(value)
			i += len(name)
			continue
		}
		b.WriteByte(body[i])
		i++
	}
	return b.String()
}

func identByte(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// inString says whether position i of the CEL text s is inside a
// single-quoted string literal.
func inString(s string, i int) bool { return insideQuotes(s, i, '\'') }

// insideQuotes says whether position i of s is between quote characters q,
// a backslash escaping the character after it inside them.
func insideQuotes(s string, i int, q byte) bool {
	in := false
	for j := 0; j < i; j++ {
		switch {
		case in && s[j] == '\\':
			j++
		case s[j] == q:
			in = !in
		}
	}
	return in
}

// raise is a CEL expression that fails evaluation with msg in its error.
func raise(msg string) string { return "{}[" + quote(msg) + "]" }

// isFalse is JMESPath's falsiness of the value named v: null, false, and
// empty strings, lists and maps.
func isFalse(v string) string {
	d := "dyn(" + v + ")"
	return "(" + d + " == null || " + celenv.EqualsBool(d, false) + " || type(" + v + ") == string && " + d + " == '' || (type(" + v + ") == list || type(" + v + ") == map) && size(" + d + ") == 0)"
}

// isNumber says whether the value named v is a number.
func isNumber(v string) string { return celenv.IsNumber(v) }

// doubleLiteral renders f as a CEL double literal.
func doubleLiteral(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}
