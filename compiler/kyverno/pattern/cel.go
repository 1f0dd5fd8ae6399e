package pattern

import (
	"strings"

	"github.com/admitc/admitc/internal/celenv"
)

// quote renders s as a CEL single-quoted string literal.
func quote(s string) string { return celenv.Quote(s) }

// kpath is a Kyverno failure path ("/spec/containers/0/image/") under
// construction: literal parts and CEL expressions (list indexes) that
// render to one CEL string expression.
type kpath struct {
	parts []string // each part is either a quoted literal or a CEL expression
	lit   []bool
}

// rootPath is Kyverno's "/".
func rootPath() kpath { return kpath{parts: []string{"/"}, lit: []bool{true}} }

// key is the path of a map value: path + key + "/".
func (p kpath) key(k string) kpath { return p.add(k+"/", true) }

// index is the path of a list element whose index is the CEL variable i.
func (p kpath) index(i string) kpath { return p.add("string("+i+")", false).add("/", true) }

func (p kpath) add(part string, lit bool) kpath {
	q := kpath{parts: append(append([]string(nil), p.parts...), part), lit: append(append([]bool(nil), p.lit...), lit)}
	return q
}

// cel renders the path as a CEL string expression, merging literals.
func (p kpath) cel() string {
	var out []string
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, quote(lit.String()))
			lit.Reset()
		}
	}
	for i, part := range p.parts {
		if p.lit[i] {
			lit.WriteString(part)
			continue
		}
		flush()
		out = append(out, part)
	}
	flush()
	return strings.Join(out, " + ")
}

// result renders a CEL expression for the result word followed by the path:
// 'fail /spec/'.
func (p kpath) result(word string) string {
	q := kpath{parts: append([]string{word + " "}, p.parts...), lit: append([]bool{true}, p.lit...)}
	return q.cel()
}

// bind evaluates body with name bound to value, once: CEL in the API server
// has no cel.bind, so a one-element list and map() stand in for it.
func bind(name, value, body string) string {
	return "[" + value + "].map(" + name + ", " + body + ")[0]"
}

// firstNotPass is the first of the outcomes that is not 'pass', or 'pass'.
// Kyverno stops at the first error in a fixed order; CEL evaluates every
// outcome (they have no side effects) and keeps the first.
func firstNotPass(outcomes []string) string {
	switch len(outcomes) {
	case 0:
		return "'pass'"
	case 1:
		return outcomes[0]
	}
	return "([" + strings.Join(outcomes, ", ") + "].filter(r, r != 'pass') + ['pass'])[0]"
}

// ternary renders c ? a : b; CEL's grammar needs the middle operand in
// parentheses when it is itself a conditional.
func ternary(c, a, b string) string {
	if strings.Contains(a, "?") {
		a = "(" + a + ")"
	}
	return c + " ? " + a + " : " + b
}
