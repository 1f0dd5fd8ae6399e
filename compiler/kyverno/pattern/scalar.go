package pattern

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitc/admitc/internal/celenv"
)

// predicate renders a CEL boolean over the value named by its argument.
type predicate func(v string) string

// scalarPredicate is pattern.Validate for a scalar pattern.
func scalarPredicate(p any, fp *field.Path) (predicate, error) {
	switch pt := p.(type) {
	case bool:
		return func(v string) string { return celenv.EqualsBool(v, pt) }, nil
	case nil:
		return nilPredicate, nil
	case int:
		return intPredicate(int64(pt)), nil
	case int64:
		return intPredicate(pt), nil
	case float64:
		return floatPredicate(pt), nil
	case string:
		return stringPredicate(pt, fp, false, true)
	}
	return nil, errorf(fp, "unsupported pattern value of type %T", p)
}

// ValidateText renders Kyverno's pattern.Validate(value, p) for a string
// pattern p and a value that is always a string, the CEL expression v (of
// type dyn): the In operators of conditions check a key's text against a
// range value this way.
func ValidateText(p, v string) (string, error) {
	pred, err := stringPredicate(p, nil, true, true)
	if err != nil {
		return "", err
	}
	return pred(v), nil
}

// intPredicate is validateIntPattern: an int equal to n, a float without
// fraction equal to n, or a string that strconv.ParseInt reads as n.
func intPredicate(n int64) predicate {
	digits := strconv.FormatInt(n, 10)
	var re string
	switch {
	case n == 0:
		re = `^[+-]?0+$`
	case n < 0:
		re = `^-0*` + digits[1:] + `$`
	default:
		re = `^\+?0*` + digits + `$`
	}
	return func(v string) string {
		return "(" + celenv.EqualsNumber(v, digits) + " || type(" + v + ") == string && " + v + ".matches(" + quote(re) + "))"
	}
}

// floatRegex accepts the decimal strings strconv.ParseFloat reads without
// overflow: at most 200 integer digits and a two-digit exponent.
const floatRegex = `^[+-]?([0-9]{1,200}(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,2})?$`

// nilPredicate is validateNilPattern: null, zero, "" or false.
func nilPredicate(v string) string {
	return "(" + v + " == null || " + celenv.EqualsNumber(v, "0") + " || " + celenv.EqualsString(v, "") + " || " + celenv.EqualsBool(v, false) + ")"
}

// floatPredicate is validateFloatPattern: a number equal to f (an int only
// when f has no fraction), or a string strconv.ParseFloat reads as f.
func floatPredicate(f float64) predicate { return numberPredicate(doubleLiteral(f)) }

// numberPredicate is validateFloatPattern for the CEL double n (a literal,
// or a value known at admission).
func numberPredicate(n string) predicate {
	return func(v string) string {
		return "(" + celenv.EqualsNumber(v, n) + " || type(" + v + ") == string && " + v + ".matches(" + quote(floatRegex) + ") && double(" + v + ") == " + n + ")"
	}
}

func doubleLiteral(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// stringPredicate is validateStringPatterns: the value equals the pattern,
// or one of the '|' alternatives has all its '&' conditions true. text
// says the value is always a string; whole is false where the value never
// equals the pattern as written (that test is left out).
func stringPredicate(p string, fp *field.Path, text, whole bool) (predicate, error) {
	var alts [][]predicate
	single := false
	for _, alt := range strings.Split(p, "|") {
		var conds []predicate
		for _, cond := range strings.Split(strings.Trim(alt, " "), "&") {
			cond = strings.Trim(cond, " ")
			pr, err := conditionPredicate(cond, fp, text)
			if err != nil {
				return nil, err
			}
			conds = append(conds, pr)
			single = cond == p && operatorOf(cond) == opEqual
		}
		alts = append(alts, conds)
	}
	single = single && len(alts) == 1 && len(alts[0]) == 1
	return func(v string) string {
		var ors []string
		for _, conds := range alts {
			var ands []string
			for _, c := range conds {
				ands = append(ands, c(v))
			}
			ors = append(ors, strings.Join(ands, " && "))
		}
		if !single && whole {
			// Kyverno passes a value equal to the pattern as written first;
			// written last, it reads as the exception it is.
			ors = append(ors, celenv.EqualsString(v, p))
		}
		if len(ors) == 1 {
			return ors[0]
		}
		return "(" + strings.Join(ors, " || ") + ")"
	}, nil
}

type operator string

const (
	opEqual      operator = ""
	opMoreEqual  operator = ">="
	opLessEqual  operator = "<="
	opNotEqual   operator = "!"
	opMore       operator = ">"
	opLess       operator = "<"
	opInRange    operator = "-"
	opNotInRange operator = "!-"
)

var (
	inRangeRegex    = regexp.MustCompile(`^([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)-([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
	notInRangeRegex = regexp.MustCompile(`^([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)!-([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
)

// operatorOf is operator.GetOperatorFromStringPattern.
func operatorOf(p string) operator {
	if len(p) < 2 {
		return opEqual
	}
	for _, op := range []operator{opMoreEqual, opLessEqual, opMore, opLess, opNotEqual} {
		if strings.HasPrefix(p, string(op)) {
			return op
		}
	}
	if notInRangeRegex.MatchString(p) {
		return opNotInRange
	}
	if inRangeRegex.MatchString(p) {
		return opInRange
	}
	return opEqual
}

// conditionPredicate is validateStringPattern: ranges become two
// comparisons, other operators compare the rest of the condition (text:
// the value is always a string).
func conditionPredicate(p string, fp *field.Path, text bool) (predicate, error) {
	switch op := operatorOf(p); op {
	case opInRange, opNotInRange:
		re, joiner, lo, hi := inRangeRegex, " && ", ">= ", "<= "
		if op == opNotInRange {
			re, joiner, lo, hi = notInRangeRegex, " || ", "< ", "> "
		}
		m := re.FindStringSubmatch(p)
		left, err := conditionPredicate(lo+m[1], fp, text)
		if err != nil {
			return nil, err
		}
		right, err := conditionPredicate(hi+m[2], fp, text)
		if err != nil {
			return nil, err
		}
		return func(v string) string { return "(" + left(v) + joiner + right(v) + ")" }, nil
	default:
		return comparison(strings.TrimSpace(p[len(op):]), op, fp, text)
	}
}

var celOp = map[operator]string{opEqual: "==", opNotEqual: "!=", opMore: ">", opLess: "<", opMoreEqual: ">=", opLessEqual: "<="}

// comparison is validateString: compared as durations when the pattern and
// the value are durations, else as quantities when both are quantities,
// else as strings with wildcards (== and != only). A missing value counts
// as "0" for durations and quantities. text says the value is always a
// string.
func comparison(p string, op operator, fp *field.Path, text bool) (predicate, error) {
	_, qerr := resource.ParseQuantity(p)
	str, err := stringComparison(p, op, qerr == nil || text, fp)
	if err != nil {
		return nil, err
	}
	out := str
	if qerr == nil {
		next, lit := out, quote(p)
		out = func(v string) string {
			isQ, qv := quantityValue(v)
			return "(" + isQ + " ? " + qv + ".compareTo(quantity(" + lit + ")) " + celOp[op] + " 0 : " + next(v) + ")"
		}
	}
	if d, err := time.ParseDuration(p); err == nil {
		next := out
		lit := fmt.Sprintf("duration('%dns')", int64(d))
		out = func(v string) string {
			isD, dv := durationValue(v)
			return "(" + isD + " ? " + dv + " " + celOp[op] + " " + lit + " : " + next(v) + ")"
		}
	}
	return out, nil
}

// quantityValue is compareQuantity's reading of the value v: whether
// convertNumberToString and ParseQuantity take it (null is "0"), and the
// quantity.
func quantityValue(v string) (is, value string) {
	return "(" + v + " == null || type(" + v + ") == int || type(" + v + ") == double || type(" + v + ") == string && isQuantity(" + v + "))",
		"quantity(type(" + v + ") == string ? " + v + " : " + v + " == null ? '0' : string(" + v + "))"
}

// durationValue is compareDuration's reading of the value v: whether
// convertNumberToString and ParseDuration take it (null and 0 are "0"),
// and the duration.
func durationValue(v string) (is, value string) {
	return "(" + v + " == null || type(" + v + ") == int && " + v + " == 0 || type(" + v + ") == string && " + v + ".matches(" + quote(durationRegex) + "))",
		"(type(" + v + ") == string ? duration(" + v + ") : duration('0s'))"
}

// durationRegex is the syntax time.ParseDuration accepts.
const durationRegex = `^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

// stringComparison is compareString: for == and != the value, if a string,
// int or bool (a float is written %E), matches the pattern with wildcards;
// other operators, and other values, never match. noFloat says no float
// reaches it: the pattern is a quantity (a float is compared as one), or
// the value is always a string.
func stringComparison(p string, op operator, noFloat bool, fp *field.Path) (predicate, error) {
	if op != opEqual && op != opNotEqual {
		return func(string) string { return "false" }, nil
	}
	double := false
	if !noFloat {
		var err error
		if double, err = matchesFloatText(p, fp); err != nil {
			return nil, err
		}
	}
	neg := ""
	if op == opNotEqual {
		neg = "!"
		double = !double
	}
	return func(v string) string {
		text := "(type(" + v + ") == string || type(" + v + ") == int || type(" + v + ") == bool)"
		return "(" + text + " ? " + neg + wildcardMatch(p, "string("+v+")") + " : type(" + v + ") == double && " + strconv.FormatBool(double) + ")"
	}, nil
}

// matchesFloatText decides whether the wildcard pattern p matches a float
// written as strconv.FormatFloat(f, 'E', -1, 64), which is at least five
// characters of [0-9.E+-]: statically, or not at all.
func matchesFloatText(p string, fp *field.Path) (bool, error) {
	if strings.Trim(p, "0123456789.E+-*?") != "" {
		return false, nil
	}
	if strings.Trim(p, "*?") == "" && strings.Contains(p, "*") && strings.Count(p, "?") <= 5 {
		return true, nil
	}
	return false, errorf(fp, "pattern %q could match a floating-point value written in Go's %%E notation, which CEL cannot produce", p)
}

// WildcardMatch renders wildcard.Match(p, s) as a CEL predicate over the
// CEL string s.
func WildcardMatch(p, s string) string { return wildcardMatch(p, s) }

// wildcardMatch renders wildcard.Match(p, s): '*' any run of characters,
// '?' exactly one.
func wildcardMatch(p, s string) string {
	if !strings.ContainsAny(p, "*?") {
		return "(" + s + " == " + quote(p) + ")"
	}
	if strings.Trim(p, "*") == "" {
		return "true"
	}
	if f := wildcardFunction(p, s); f != "" {
		return f
	}
	var re strings.Builder
	re.WriteString("^")
	for _, r := range p {
		switch r {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	return s + ".matches(" + quote("(?s)"+re.String()) + ")"
}

// Predicate is Kyverno's pattern.Validate(value, p) for the scalar pattern
// p (a string, number, bool or null), as CEL over the variable v holding a
// value of any type (null for a missing one).
func Predicate(p any, v string) (string, error) {
	pred, err := scalarPredicate(p, field.NewPath("pattern"))
	if err != nil {
		return "", err
	}
	return pred(v), nil
}

// PredicateOfOthers is Predicate on a value that never equals the string
// pattern p as written (a field whose values the API server limits to an
// enum that p is not one of, such as "RuntimeDefault | Localhost"):
// without Kyverno's first test, the value equal to the whole pattern.
func PredicateOfOthers(p string, v string) (string, error) {
	pred, err := stringPredicate(p, field.NewPath("pattern"), false, false)
	if err != nil {
		return "", err
	}
	return pred(v), nil
}

// wildcardFunction is wildcardMatch with CEL's string functions for the
// shapes people write: "?*" (not empty), "X*", "*X", "*X*" and "X*Y" with
// literal X and Y; "" for any other pattern.
func wildcardFunction(p, s string) string {
	if p == "?*" || p == "*?" {
		return "(" + s + " != '')"
	}
	if strings.Contains(p, "?") {
		return ""
	}
	inner := strings.Trim(p, "*")
	lead, trail := strings.HasPrefix(p, "*"), strings.HasSuffix(p, "*")
	switch {
	case strings.Contains(inner, "*"):
		if lead || trail || strings.Count(inner, "*") != 1 {
			return ""
		}
		x, y, _ := strings.Cut(inner, "*")
		return "(" + s + ".size() >= " + strconv.Itoa(utf8.RuneCountInString(x)+utf8.RuneCountInString(y)) + " && " + s + ".startsWith(" + quote(x) + ") && " + s + ".endsWith(" + quote(y) + "))"
	case lead && trail:
		return s + ".contains(" + quote(inner) + ")"
	case lead:
		return s + ".endsWith(" + quote(inner) + ")"
	}
	return s + ".startsWith(" + quote(inner) + ")"
}
