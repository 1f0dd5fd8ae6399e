package conditions

import (
	"strings"

	"github.com/admitc/admitc/compiler/kyverno/pattern"
)

// inRange renders the AnyIn, AllIn, AnyNotIn and AllNotIn operators (op,
// lower case) on the key k with a literal range value lit ("8000-9000",
// operator.InRangeRegex: two numbers, each with a sign '-', '+' or '|' and
// a unit suffix): Kyverno's anyKeyExistsInArray, anySetExistsInArray and
// allSetExistsInArray check the text of the key (fmt.Sprint of a scalar
// key, of each element of a list key) with pattern.Validate(text, lit),
// which compares as durations, then quantities, then text. A list key of
// one element equal to lit is in it. AnyNotIn on a list key checks each
// element against lit with its first '-' turned into '!-' (a negative
// lower bound makes that the '!' operator). Other keys (maps, null) are
// false, as Kyverno's handlers say.
func inRange(op, k, lit string) (string, error) {
	not, all := strings.Contains(op, "not"), strings.HasPrefix(op, "all")
	in, err := pattern.ValidateText(lit, "dyn(kt)")
	if err != nil {
		return "", err
	}
	scalar := bind("kt", sprint(k), map[bool]string{false: in, true: "!(" + in + ")"}[not])
	each := "kl.exists(kt, " + in + ")"
	switch {
	case all && !not:
		each = "kl.all(kt, " + in + ")"
	case all && not:
		each = "kl.all(kt, !(" + in + "))"
	case not:
		out, err := pattern.ValidateText(strings.Replace(lit, "-", "!-", 1), "dyn(kt)")
		if err != nil {
			return "", err
		}
		each = "kl.exists(kt, " + out + ")"
	}
	same := map[bool]string{false: "true", true: "false"}[not]
	list := bind("kl", k+".map(e, "+sprint("e")+")", "size(kl) == 1 && kl[0] == "+quote(lit)+" ? "+same+" : "+each)
	return "(type(" + k + ") == string || " + isNumber(k) + " || type(" + k + ") == bool ? " + scalar + " : type(" + k + ") == list ? " + list + " : false)", nil
}

// notStringArray renders the In operators on the key k with a literal
// value lit that is JSON but not a list of strings ("10", "true", "[1]"):
// Kyverno's handlers first compare a scalar key's text with lit as a
// wildcard pattern, a list key of one element with lit; past that, the
// value's type is invalid and the operator is false (AnyNotIn and AllNotIn
// too).
func notStringArray(not bool, k, lit string) string {
	if not {
		return "false"
	}
	return "(type(" + k + ") == string || " + isNumber(k) + " || type(" + k + ") == bool ? " + wild(quote(lit), sprint(k)) +
		" : type(" + k + ") == list && size(" + k + ") == 1 && " + sprint(k+"[0]") + " == " + quote(lit) + ")"
}
