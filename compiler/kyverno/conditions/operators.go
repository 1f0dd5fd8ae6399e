package conditions

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/admitc/admitc/compiler/kyverno/pattern"
)

// Regular expressions the operators test values with.
const (
	// durationRegex is what time.ParseDuration accepts.
	durationRegex = `^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
	// floatRegex is the decimal, infinite and NaN text strconv.ParseFloat
	// accepts (hexadecimal floats are not recognised).
	floatRegex = `^[+-]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))$`
)

// rangeRegex is Kyverno's InRange operator pattern ("1-10").
var rangeRegex = regexp.MustCompile(`^([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)-([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)$`)

func isDuration(v string) string {
	return "(type(" + v + ") == string && " + v + " != '0' && " + v + ".matches(" + quote(durationRegex) + "))"
}

func isFloatText(v string) string {
	return "(type(" + v + ") == string && " + v + ".matches(" + quote(floatRegex) + "))"
}

// durationOf is parseDuration's value: a duration string, or a number of
// seconds (truncated, as time.Duration(float) truncates).
func durationOf(v string) string {
	return "(type(" + v + ") == string ? duration(" + v + ") : duration(string(int(double(" + v + "))) + 's'))"
}

// wild is wildcard.Match(p, s) for CEL strings p and s.
func wild(p, s string) string { return pattern.DynamicWildcardMatch(p, s) }

// NotParsedAtAdmission is the error the translation raises where Kyverno
// parses a string value computed at admission (JSON, a range), which no
// CEL form does.
const NotParsedAtAdmission = "admitc does not parse a JSON or range value computed at admission"

// JSONStrings is the CEL test that the string s is a JSON array of
// strings that hold no escape (a backslash) and no control character, with
// JSON's white space around its tokens, and the CEL list of its strings:
// the texts between its quotes. Kyverno's In operators parse such a value
// (json.Unmarshal into []string) to exactly those strings; other JSON they
// parse is not read here (ParsedAtAdmission).
func JSONStrings(s string) (test, strs string) {
	return s + ".matches(" + quote(jsonStringsRegex) + ")", s + `.split('"').transformList(i, t, i % 2 == 1, t)`
}

const (
	jsonSpace        = `[ \t\n\r]*`
	jsonPlainString  = `"[^"\\\x00-\x1f]*"`
	jsonStringsRegex = `^` + jsonSpace + `\[` + jsonSpace + `(` + jsonPlainString + jsonSpace + `(,` + jsonSpace + jsonPlainString + jsonSpace + `)*)?\]` + jsonSpace + `$`
)

// JSONNull is the CEL test that the string s is JSON's null, which
// Kyverno's In operators parse to no strings (json.Unmarshal leaves the
// list nil).
func JSONNull(s string) string {
	return s + ".matches(" + quote(`^`+jsonSpace+`null`+jsonSpace+`$`) + ")"
}

// JSONNotStrings is the CEL test that the string s is JSON that is no list
// of strings (a number, true, false, a string): Kyverno's In operators
// fail to parse it as one, and take the value as of an invalid type.
func JSONNotStrings(s string) string {
	return s + ".matches(" + quote(`^`+jsonSpace+`(`+jsonNumber+`|true|false|`+jsonString+`)`+jsonSpace+`$`) + ")"
}

const (
	jsonNumber = `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
	jsonString = `"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"`
)

// ParsedAtAdmission is the CEL test that the string s may be one Kyverno's
// In operators parse as JSON or as a range, and JSONStrings, JSONNull and
// JSONNotStrings do not read: an array or an object (JSON values that
// start otherwise are numbers, strings, true, false and null, which those
// read, or not JSON at all), or a range.
func ParsedAtAdmission(s string) string {
	return s + ".matches('^\\\\s*[\\\\[{]') || " + s + ".matches(" + quote(rangeRegex.String()) + ")"
}

// Wild is wildcard.Match(p, s) for CEL strings p and s.
func Wild(p, s string) string { return wild(p, s) }

// WildEither is Kyverno's match of two strings in its In operators
// (the CEL expressions a and b): either is a wildcard pattern of the
// other (wildcard.Match both ways).
func WildEither(a, b string) string { return "(" + wild(a, b) + " || " + wild(b, a) + ")" }

// sprint is fmt.Sprint of a value as Kyverno's In operators write it
// (numbers are float64 there): a scalar, or a list of scalars ("[a b]");
// maps and deeper lists raise an evaluation error.
func sprint(v string) string {
	texts := "(type(" + v + ") == list ? " + v + " : [" + v + "]).map(se, " + isScalar("se") + " ? " + sprintScalar("se") + " : " + raise("admitc does not write a map or list as Go's fmt text") + ")"
	return "[" + texts + "].map(sl, type(" + v + ") == list ? '[' + sl.join(' ') + ']' : sl[0])[0]"
}

func isScalar(v string) string {
	return "(type(" + v + ") == string || type(" + v + ") == bool || " + v + " == null || " + isNumber(v) + ")"
}

// sprintScalar is fmt.Sprint of a scalar.
func sprintScalar(v string) string {
	return "(type(" + v + ") == string ? " + v + " : type(" + v + ") == bool ? string(" + v + ") : " + v + " == null ? '<nil>' : " + numberText(v, "fmt") + ")"
}

// Operator renders the CEL boolean of a condition: the operator of
// Kyverno's operator package on the key and value (CEL expressions), with
// rawKey and raw the key and value as written (a literal string decides
// statically what Kyverno would parse from it; a literal map or list is
// the left operand of a deep equality, see deepEqual).
func Operator(op string, key, val string, rawKey, raw any) (string, error) {
	k, v := "k", "v"
	var body string
	switch strings.ToLower(op) {
	case "equal", "equals":
		body = equals(k, v, deepEqual(k, v, rawKey, raw))
	case "notequal", "notequals":
		body = notEquals(k, v, deepEqual(k, v, rawKey, raw))
	case "greaterthan", "greaterthanorequals", "lessthan", "lessthanorequals":
		body = numeric(map[string]string{"greaterthan": ">", "greaterthanorequals": ">=", "lessthan": "<", "lessthanorequals": "<="}[strings.ToLower(op)], k, v)
	case "anyin", "allin", "anynotin", "allnotin":
		b, err := in(strings.ToLower(op), k, v, raw)
		if err != nil {
			return "", err
		}
		body = b
	default:
		return "", fmt.Errorf("operator %s is not translated (Equals, NotEquals, AnyIn, AllIn, AnyNotIn, AllNotIn, GreaterThan, GreaterThanOrEquals, LessThan, LessThanOrEquals are); %s", op, rewriteOrKeep)
	}
	return "[dyn(" + key + ")].map(k, [dyn(" + val + ")].map(v, " + body + ")[0])[0]", nil
}

// deepEqual renders the deep equality of two maps or two lists k and v
// (Kyverno's datautils.DeepEqual) with the operand written as a literal in
// the policy on the left. CEL's == asks the left operand: a literal map or
// list compares element by element and answers false for elements of
// different kinds, while a map or list of a built-in object on
// kube-apiserver 1.37 raises "no such overload" for a nested value of
// another kind (a field holding a map where the literal has a string).
// Both operands computed from the request are compared as they come.
func deepEqual(k, v string, rawKey, raw any) string {
	if isLiteral(raw) && !isLiteral(rawKey) {
		return v + " == " + k
	}
	return k + " == " + v
}

// isLiteral says whether a condition's key or value as written holds no
// {{ }} variable.
func isLiteral(raw any) bool {
	switch t := raw.(type) {
	case string:
		return !variableRegex.MatchString(t)
	case map[string]any:
		for k, e := range t {
			if !isLiteral(k) || !isLiteral(e) {
				return false
			}
		}
	case []any:
		for _, e := range t {
			if !isLiteral(e) {
				return false
			}
		}
	}
	return true
}

// equals is EqualHandler.Evaluate; deep is the deep equality of k and v
// when both are maps or both lists.
func equals(k, v, deep string) string {
	return "(type(" + k + ") == bool ? (type(" + v + ") == bool && " + k + " == " + v + ") : " +
		isNumber(k) + " ? (" + isNumber(v) + " ? double(" + k + ") == double(" + v + ") : " + isFloatText(v) + " && double(" + v + ") == double(" + k + ")) : " +
		"type(" + k + ") == string ? (" + isDuration(k) + " && (" + isDuration(v) + " || " + isNumber(v) + ") ? " + durationOf(k) + " == " + durationOf(v) + " : " +
		"isQuantity(" + k + ") && type(" + v + ") == string ? (isQuantity(" + v + ") && quantity(" + k + ").compareTo(quantity(" + v + ")) == 0) : " +
		"type(" + v + ") == string && " + wild(v, k) + ") : " +
		"(type(" + k + ") == map && type(" + v + ") == map || type(" + k + ") == list && type(" + v + ") == list) && " + deep + ")"
}

// notEquals is NotEqualHandler.Evaluate (not the negation of equals:
// mismatched types are unequal, an unsupported key is false).
func notEquals(k, v, deep string) string {
	return "(type(" + k + ") == bool ? (type(" + v + ") != bool || " + k + " != " + v + ") : " +
		isNumber(k) + " ? (" + isNumber(v) + " ? double(" + k + ") != double(" + v + ") : !" + isFloatText(v) + " || double(" + v + ") != double(" + k + ")) : " +
		"type(" + k + ") == string ? (" + isDuration(k) + " && (" + isDuration(v) + " || " + isNumber(v) + ") ? " + durationOf(k) + " != " + durationOf(v) + " : " +
		"isQuantity(" + k + ") && type(" + v + ") == string ? (" + v + " == '' || !isQuantity(" + v + ") || quantity(" + k + ").compareTo(quantity(" + v + ")) != 0) : " +
		"type(" + v + ") != string || !" + wild(v, k) + ") : " +
		"type(" + k + ") == map ? (type(" + v + ") != map || !(" + deep + ")) : type(" + k + ") == list ? (type(" + v + ") != list || !(" + deep + ")) : false)"
}

// numeric is NumericOperatorHandler.Evaluate with the comparison op.
func numeric(op, k, v string) string {
	return "(" + isNumber(k) + " ? " + numberVs(op, "double("+k+")", v) + " : " +
		"type(" + k + ") == string ? (" + isDuration(k) + " && (" + isDuration(v) + " || " + isNumber(v) + ") ? " + durationOf(k) + " " + op + " " + durationOf(v) + " : " +
		"isQuantity(" + k + ") && type(" + v + ") == string && isQuantity(" + v + ") ? quantity(" + k + ").compareTo(quantity(" + v + ")) " + op + " 0 : " +
		isFloatText(k) + " ? " + numberVs(op, "double("+k+")", v) + " : " +
		"isSemver(" + k + ") ? (type(" + v + ") == string && isSemver(" + v + ") && semver(" + k + ").compareTo(semver(" + v + ")) " + op + " 0) : false) : false)"
}

// numberVs is validateValueWithFloatPattern: the number kd against v.
func numberVs(op, kd, v string) string {
	return "(" + isNumber(v) + " ? " + kd + " " + op + " double(" + v + ") : " + isDuration(v) + " ? duration(string(int(" + kd + ")) + 's') " + op + " duration(" + v + ") : " +
		isFloatText(v) + " && " + kd + " " + op + " double(" + v + "))"
}

// in renders the AnyIn, AllIn, AnyNotIn and AllNotIn operators.
func in(op, k, v string, raw any) (string, error) {
	not := strings.Contains(op, "not")
	all := strings.HasPrefix(op, "all")
	match := WildEither
	// The value list, when the value is a string: statically for a
	// literal, at run time otherwise (a JSON array of plain strings is
	// parsed; other JSON-like text raises an error).
	stringList := func(s string) string {
		isJSON, strs := JSONStrings(s)
		return "(" + isJSON + " ? dyn(" + strs + ") : " + JSONNull(s) + " ? dyn([]) : " + JSONNotStrings(s) + " ? null : " +
			ParsedAtAdmission(s) + " ? " + raise(NotParsedAtAdmission) + " : dyn([" + s + "]))"
	}
	invalid := "null"
	if lit, ok := raw.(string); ok && !variableRegex.MatchString(lit) {
		if rangeRegex.MatchString(lit) {
			return inRange(op, k, lit)
		}
		var arr []string
		switch {
		case json.Valid([]byte(lit)) && json.Unmarshal([]byte(lit), &arr) != nil:
			return notStringArray(not, k, lit), nil
		case json.Valid([]byte(lit)):
		default:
			arr = []string{lit}
		}
		var q []string
		for _, a := range arr {
			q = append(q, quote(a))
		}
		invalid = "[" + strings.Join(q, ", ") + "]"
	}
	vs := "(type(" + v + ") == list ? dyn(" + v + ".map(e, " + sprint("e") + ")) : type(" + v + ") == string ? " + stringList(v) + " : null)"
	if invalid != "null" {
		vs = "dyn(" + invalid + ")"
	}
	// scalar key: found when a value matches either way (a string value
	// is also tried as a wildcard pattern, then for equality).
	ks := "ks"
	found := "(" + bind("vl", vs, "vl != null && vl.exists(b, "+match(ks, "b")+")") + ")"
	if invalid == "null" {
		hits := "(type(" + v + ") == list ? vl.exists(b, " + match(ks, "b") + ") : vl.exists(b, b == " + ks + "))"
		found = "(type(" + v + ") == string && " + wild(v, ks) + " || " + bind("vl", vs, "vl != null && "+hits) + ")"
		if not {
			// A value Kyverno's JSON parse gives no list of (invalid
			// type): no key is not in it either.
			found = "!(!(type(" + v + ") == string && " + wild(v, ks) + ") && " + bind("vl", vs, "vl != null && !"+hits) + ")"
		}
	} else if lit, ok := raw.(string); ok {
		found = "(" + wild(quote(lit), ks) + " || " + vs + ".exists(b, b == " + ks + "))"
	}
	valid := "(type(" + v + ") == list || type(" + v + ") == string)"
	if invalid != "null" {
		valid = "true"
	}
	scalar := bind(ks, sprint(k), valid+" && "+map[bool]string{false: found, true: "!" + found}[not])
	// list key.
	setVs := "(type(" + v + ") == list ? dyn(" + v + ".map(e, " + sprint("e") + ")) : " + isNumber(v) + " || type(" + v + ") == bool ? dyn([" + sprint(v) + "]) : type(" + v + ") == string ? " + stringList(v) + " : null)"
	if invalid != "null" {
		setVs = "dyn(" + invalid + ")"
	}
	if all {
		setVs = "(" + isNumber(v) + " || type(" + v + ") == bool ? null : dyn(" + setVs + "))"
	}
	hit := func(a string) string { return "vl.exists(b, " + match(a, "b") + ")" }
	var set string
	switch {
	case !all && !not:
		set = "kl.exists(a, " + hit("a") + ")"
	case all && !not:
		set = "kl.all(a, " + hit("a") + ")"
	case !all && not:
		set = "kl.exists(a, !" + hit("a") + ")"
	default:
		set = "kl.all(a, !" + hit("a") + ")"
	}
	single := "false"
	if !not {
		single = "true"
	}
	sameString := "type(" + v + ") == string && size(kl) == 1 && kl[0] == " + v
	if lit, ok := raw.(string); ok && !variableRegex.MatchString(lit) {
		sameString = "size(kl) == 1 && kl[0] == " + quote(lit)
	}
	list := bind("kl", k+".map(e, "+sprint("e")+")", "("+sameString+") ? "+single+" : "+bind("vl", setVs, "vl != null && "+set))
	return "(type(" + k + ") == string || " + isNumber(k) + " || type(" + k + ") == bool ? " + scalar + " : type(" + k + ") == list ? " + list + " : false)", nil
}

var (
	durationText = regexp.MustCompile(durationRegex)
	floatText    = regexp.MustCompile(floatRegex)
)

// IsDurationText says whether Kyverno's operators read the string s as a
// duration.
func IsDurationText(s string) bool { return s != "0" && durationText.MatchString(s) }

// IsFloatText says whether Kyverno's operators read the string s as a
// number (strconv.ParseFloat).
func IsFloatText(s string) bool { return floatText.MatchString(s) }

// IsRange says whether Kyverno's In operators read the string s as a
// range ("8000-9000").
func IsRange(s string) bool { return rangeRegex.MatchString(s) }
