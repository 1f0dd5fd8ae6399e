package conditions

import (
	"sort"
	"strings"

	gojmespath "github.com/kyverno/go-jmespath"
)

// jmesFunction is one JMESPath function admitc translates: its number of
// arguments and its CEL, given the CEL names its arguments are bound to.
type jmesFunction struct {
	arity int
	lower func(t *translator, args []string) string
}

// functions are the functions of the subset, with the semantics of
// go-jmespath's table as Kyverno v1.19 extends it (pkg/engine/jmespath):
// an argument of the wrong type fails evaluation, as the fork's typeCheck
// and Kyverno's validateArg do; numbers are Kyverno's float64.
var functions = map[string]jmesFunction{
	"length":      {1, lowerLength},
	"to_string":   {1, lowerToString},
	"contains":    {2, lowerContains},
	"starts_with": {2, func(_ *translator, a []string) string { return stringMethod("starts_with", "startsWith", a) }},
	"ends_with":   {2, func(_ *translator, a []string) string { return stringMethod("ends_with", "endsWith", a) }},
	"keys":        {1, func(t *translator, a []string) string { return lowerKeys(t, a[0], false) }},
	"values":      {1, func(t *translator, a []string) string { return lowerKeys(t, a[0], true) }},
	"to_upper":    {1, func(_ *translator, a []string) string { return changeCase("to_upper", "upperAscii", a[0]) }},
	"to_lower":    {1, func(_ *translator, a []string) string { return changeCase("to_lower", "lowerAscii", a[0]) }},
	"regex_match": {2, lowerRegexMatch},
	"join":        {2, lowerJoin},
	"split":       {2, lowerSplit},
	"to_array":    {1, func(_ *translator, a []string) string { return isList(a[0]) + " ? " + a[0] + " : [" + a[0] + "]" }},
	"not_null":    {variadic, lowerNotNull},
	"type":        {1, lowerType},
	"reverse":     {1, lowerReverse},
	"abs":         {1, lowerAbs},
	"floor":       {1, func(_ *translator, a []string) string { return lowerRound("floor", a[0], false) }},
	"ceil":        {1, func(_ *translator, a []string) string { return lowerRound("ceil", a[0], true) }},
	"max":         {1, func(t *translator, a []string) string { return lowerExtreme(t, "max", ">=", a[0]) }},
	"min":         {1, func(t *translator, a []string) string { return lowerExtreme(t, "min", "<=", a[0]) }},
	"sort":        {1, lowerSort},
	"equal_fold":  {2, lowerEqualFold},
	"replace":     {4, lowerReplace},
	"replace_all": {3, func(_ *translator, a []string) string {
		return isString(a[0]) + " && " + isString(a[1]) + " && " + isString(a[2]) + " ? " + a[0] + ".replace(" + a[1] + ", " + a[2] + ") : " + invalidType("replace_all")
	}},
	"trim":          {2, lowerTrim},
	"trim_prefix":   {2, lowerTrimPrefix},
	"to_boolean":    {1, lowerToBoolean},
	"label_match":   {2, lowerLabelMatch},
	"pattern_match": {2, lowerPatternMatch},
	"truncate":      {2, lowerTruncate},
	"lookup":        {2, lowerLookup},
	"items":         {3, lowerItems},
	"to_number":     {1, lowerToNumber},
	"add":           {2, func(_ *translator, a []string) string { return lowerArithmetic("add", a) }},
	"subtract":      {2, func(_ *translator, a []string) string { return lowerArithmetic("subtract", a) }},
	"multiply":      {2, func(_ *translator, a []string) string { return lowerArithmetic("multiply", a) }},
	"divide":        {2, func(_ *translator, a []string) string { return lowerArithmetic("divide", a) }},
	"modulo":        {2, func(_ *translator, a []string) string { return lowerArithmetic("modulo", a) }},
	"sum":           {1, lowerSum},
	"avg":           {1, lowerAvg},
	"merge":         {variadic, lowerMerge},
	// Functions over an expression reference (&expr), lowered by
	// exprefFunction: map(&expr, list), max_by(list, &expr),
	// min_by(list, &expr).
	"map":    {2, nil},
	"max_by": {2, nil},
	"min_by": {2, nil},
}

// exprefArgument is the position of the expression reference of the
// functions that take one.
var exprefArgument = map[string]int{"map": 0, "max_by": 1, "min_by": 1}

// variadic is the arity of a function that takes one argument or more.
const variadic = -1

// functionNames lists the functions of the subset, sorted.
func functionNames() string {
	known := make([]string, 0, len(functions))
	for k := range functions {
		known = append(known, k)
	}
	sort.Strings(known)
	return strings.Join(known, ", ")
}

// function lowers a call of a function of the subset; its arguments read
// missing keys as null.
func (t *translator) function(n gojmespath.ASTNode, cur value) (string, error) {
	name := n.Value.(string)
	f, ok := functions[name]
	if !ok {
		return "", t.refuse("function %s() is not in the subset admitc translates (%s); %s", name, functionNames(), rewriteOrKeep)
	}
	if f.arity == variadic && len(n.Children) == 0 {
		return "", t.refuse("%s() takes one argument or more: correct the call", name)
	}
	if f.arity != variadic && len(n.Children) != f.arity {
		return "", t.refuse("%s() takes %d argument(s): correct the call", name, f.arity)
	}
	if t.scope.Capture {
		return "", t.refuse("function %s() is not translated where Kyverno handles an evaluation error itself (a foreach list or precondition skips the entry or the element; a context variable with a default takes the default), and a function's error is one CEL cannot catch; compute it in the rule's deny conditions or a context variable without a default, or keep the rule under Kyverno", name)
	}
	if ref, ok := exprefArgument[name]; ok {
		return t.exprefFunction(name, n.Children[ref], n.Children[1-ref], cur)
	}
	var args, names []string
	for _, c := range n.Children {
		a, err := t.concrete(c, cur, false)
		if err != nil {
			return "", err
		}
		args = append(args, "dyn("+a+")")
		names = append(names, t.name())
	}
	// dyn: a function's value is JSON, compared with null in projections.
	body := "dyn(" + f.lower(t, names) + ")"
	for i := len(args) - 1; i >= 0; i-- {
		body = bind(names[i], args[i], body)
	}
	return body, nil
}

func isString(v string) string { return "type(" + v + ") == string" }

func invalidType(name string) string { return raise("invalid type for " + name + "()") }

// lowerLength is length(): the runes of a string (CEL's size counts code
// points too), the elements of a list, the keys of a map, as a number.
func lowerLength(_ *translator, a []string) string {
	return "type(" + a[0] + ") == string || type(" + a[0] + ") == list || type(" + a[0] + ") == map ? double(size(" + a[0] + ")) : " + invalidType("length")
}

// lowerToString is to_string(): a string itself, anything else as JSON.
func lowerToString(_ *translator, a []string) string {
	return isString(a[0]) + " ? " + a[0] + " : " + jsonText(a[0])
}

// lowerContains is the fork's contains(): a substring of a string (false
// for a non-string), an element of a list.
func lowerContains(_ *translator, a []string) string {
	return isString(a[0]) + " ? (" + isString(a[1]) + " && " + a[0] + ".contains(" + a[1] + ")) : " + isList(a[0]) + " ? " + a[1] + " in " + a[0] + " : " + invalidType("contains")
}

func stringMethod(name, method string, a []string) string {
	return isString(a[0]) + " && " + isString(a[1]) + " ? " + a[0] + "." + method + "(" + a[1] + ") : " + invalidType(name)
}

// lowerKeys is keys() (or values()) of a map. Kyverno's order is Go's map
// order, which is random; admitc's is CEL's, so only order-free uses
// (length, contains, the In operators) agree.
func lowerKeys(t *translator, m string, values bool) string {
	k := t.name()
	each := k
	name := "keys"
	if values {
		each, name = m+"["+k+"]", "values"
	}
	return "type(" + m + ") == map ? dyn(" + m + ".map(" + k + ", " + each + ")) : " + invalidType(name)
}

// changeCase is to_upper() and to_lower(): Kyverno's strings.ToUpper and
// ToLower are Unicode's, CEL's upperAscii and lowerAscii ASCII's only, so
// a string with a non-ASCII character fails evaluation here.
func changeCase(name, method, s string) string {
	return isString(s) + " ? (" + isASCII(s) + " ? " + s + "." + method + "() : " + raise("admitc does not change the case of a non-ASCII string in "+name+"()") + ") : " + invalidType(name)
}

func isASCII(s string) string { return s + ".matches(" + quote(`^[\x00-\x7f]*$`) + ")" }

// lowerRegexMatch is Kyverno's regex_match(pattern, value): Go's
// regexp.Match, unanchored, of a string pattern (an invalid one fails
// evaluation) on a string or a number written as Kyverno's ifaceToString
// does (strconv.FormatFloat(f, 'f', -1, 32)); CEL's matches is the same RE2
// search. Only integers up to 2^24 in magnitude, which float32 holds
// exactly, are written here; other numbers fail evaluation.
func lowerRegexMatch(_ *translator, a []string) string {
	return isString(a[0]) + " && (" + isString(a[1]) + " || " + isNumber(a[1]) + ") ? " + kyvernoText(a[1]) + ".matches(" + a[0] + ") : " + invalidType("regex_match")
}

// kyvernoText is Kyverno's ifaceToString of the string or number named v.
func kyvernoText(v string) string {
	d := "double(" + v + ")"
	exact := d + " >= -16777216.0 && " + d + " <= 16777216.0 && " + d + " == double(int(" + d + "))"
	return "(" + isString(v) + " ? string(" + v + ") : " + exact + " ? string(int(" + d + ")) : " + raise("admitc does not write this number as Kyverno's float32 text") + ")"
}

// lowerJoin is the fork's join(separator, list of strings).
func lowerJoin(t *translator, a []string) string {
	e := t.name()
	return isString(a[0]) + " && " + isList(a[1]) + " && " + a[1] + ".all(" + e + ", " + isString(e) + ") ? " + a[1] + ".join(" + a[0] + ") : " + invalidType("join")
}

// lowerSplit is Kyverno's split(string, separator): Go's strings.Split,
// which CEL's split is (an empty separator splits into characters).
func lowerSplit(_ *translator, a []string) string {
	return isString(a[0]) + " && " + isString(a[1]) + " ? dyn(" + a[0] + ".split(" + a[1] + ")) : " + invalidType("split")
}

// lowerNotNull is not_null(): its first argument that is not null, or
// null.
func lowerNotNull(_ *translator, a []string) string {
	out := "null"
	for i := len(a) - 1; i >= 0; i-- {
		out = a[i] + " != null ? " + a[i] + " : " + out
	}
	return out
}

// lowerType is type(): JMESPath's name of the value's type.
func lowerType(_ *translator, a []string) string {
	v := a[0]
	return isString(v) + " ? 'string' : " + isList(v) + " ? 'array' : type(" + v + ") == map ? 'object' : " + v + " == null ? 'null' : type(" + v + ") == bool ? 'boolean' : 'number'"
}

// lowerReverse is reverse() of a list or a string (its runes; CEL's
// substring counts code points).
func lowerReverse(t *translator, a []string) string {
	v, i := a[0], t.name()
	at := "size(" + v + ") - 1 - " + i
	return isList(v) + " ? dyn(lists.range(size(" + v + ")).map(" + i + ", " + v + "[" + at + "])) : " +
		isString(v) + " ? dyn(lists.range(size(" + v + ")).map(" + i + ", " + v + ".substring(" + at + ", size(" + v + ") - " + i + ")).join('')) : " + invalidType("reverse")
}

// lowerAbs is abs() of a number, Go's math.Abs: never -0.
func lowerAbs(_ *translator, a []string) string {
	d := "double(" + a[0] + ")"
	return isNumber(a[0]) + " ? (" + d + " < 0.0 ? -" + d + " : " + d + " == 0.0 ? 0.0 : " + d + ") : " + invalidType("abs")
}

// lowerRound is floor() (or ceil()) of a number, Go's math.Floor (Ceil):
// a float64 beyond 2^53 is an integer already; below it int() truncates
// toward zero and a fraction moves it down (up) by one.
func lowerRound(name, v string, up bool) string {
	d := "double(" + v + ")"
	trunc := "double(int(" + d + "))"
	moved, away := trunc+" - 1.0", d+" < 0.0"
	if up {
		moved, away = trunc+" + 1.0", d+" > 0.0"
	}
	big := "(" + d + " >= 9007199254740992.0 || " + d + " <= -9007199254740992.0)"
	// Go's Ceil of a number in (-1, 0) is -0, CEL's double(int()) of it
	// is 0: the one case written apart.
	negZero := ""
	if up {
		negZero = d + " > -1.0 && " + d + " < 0.0 ? -0.0 : "
	}
	return isNumber(v) + " ? (" + big + " || " + trunc + " == " + d + " ? " + d + " : " + negZero + "(" + away + " ? " + moved + " : " + trunc + ")) : " + invalidType(name)
}

// lowerExtreme is max() (op >=) or min() (<=) of a list of numbers (as
// float64) or of strings: the first element no other passes, null for an
// empty list; a list of neither fails.
func lowerExtreme(t *translator, name, op, v string) string {
	x, y, l := t.name(), t.name(), t.name()
	pick := func(l string) string {
		return "size(" + l + ") == 0 ? dyn(null) : dyn(" + l + ".filter(" + x + ", " + l + ".all(" + y + ", " + x + " " + op + " " + y + "))[0])"
	}
	nums := bind(l, v+".map("+x+", double("+x+"))", pick(l))
	return isList(v) + " && " + v + ".all(" + x + ", " + isNumber(x) + ") ? dyn(" + nums + ") : " +
		isList(v) + " && " + v + ".all(" + x + ", " + isString(x) + ") ? dyn(" + pick(v) + ") : " + invalidType(name)
}

// lowerSort is sort() of a list of numbers (as float64) or of strings
// (bytewise, as Go's sort.Strings and CEL's string order).
func lowerSort(t *translator, a []string) string {
	v, x := a[0], t.name()
	return isList(v) + " && " + v + ".all(" + x + ", " + isNumber(x) + ") ? dyn(" + v + ".map(" + x + ", double(" + x + ")).sort()) : " +
		isList(v) + " && " + v + ".all(" + x + ", " + isString(x) + ") ? dyn(" + v + ".sort()) : " + invalidType("sort")
}

// lowerEqualFold is Kyverno's equal_fold(), strings.EqualFold: Unicode's
// case folding, which CEL has for ASCII only (lowerAscii), so a string
// with a non-ASCII character is an evaluation error.
func lowerEqualFold(_ *translator, a []string) string {
	return isString(a[0]) + " && " + isString(a[1]) + " ? (" + isASCII(a[0]) + " && " + isASCII(a[1]) + " ? " + a[0] + ".lowerAscii() == " + a[1] + ".lowerAscii() : " +
		raise("admitc does not fold the case of a non-ASCII string in equal_fold()") + ") : " + invalidType("equal_fold")
}

// lowerReplace is Kyverno's replace(s, old, new, n), strings.Replace with
// n as Go's int() of the number (CEL's replace is strings.Replace; n < 0
// replaces all); a count beyond int64 is an evaluation error.
func lowerReplace(_ *translator, a []string) string {
	n := "double(" + a[3] + ")"
	return isString(a[0]) + " && " + isString(a[1]) + " && " + isString(a[2]) + " && " + isNumber(a[3]) + " ? (" + n + " > -9.2e18 && " + n + " < 9.2e18 ? " +
		a[0] + ".replace(" + a[1] + ", " + a[2] + ", int(" + n + ")) : " + raise("admitc does not replace a count beyond int64 in replace()") + ") : " + invalidType("replace")
}

// lowerTrim is Kyverno's trim(s, cutset), strings.Trim: the characters of
// s from the first to the last that is not in cutset.
func lowerTrim(t *translator, a []string) string {
	s, cut, i, k := a[0], a[1], t.name(), t.name()
	kept := "lists.range(size(" + s + ")).filter(" + i + ", !" + cut + ".contains(" + s + ".substring(" + i + ", " + i + " + 1)))"
	return isString(s) + " && " + isString(cut) + " ? " + bind(k, kept, "size("+k+") == 0 ? '' : "+s+".substring("+k+"[0], "+k+"[size("+k+") - 1] + 1)") + " : " + invalidType("trim")
}

// lowerTrimPrefix is Kyverno's trim_prefix(), strings.TrimPrefix.
func lowerTrimPrefix(_ *translator, a []string) string {
	return isString(a[0]) + " && " + isString(a[1]) + " ? (" + a[0] + ".startsWith(" + a[1] + ") ? " + a[0] + ".substring(size(" + a[1] + ")) : " + a[0] + ") : " + invalidType("trim_prefix")
}

// lowerToBoolean is Kyverno's to_boolean(): "true" or "false" in any case
// (Go's strings.ToLower maps no other character to those letters), else
// an error.
func lowerToBoolean(_ *translator, a []string) string {
	l := a[0] + ".lowerAscii()"
	return isString(a[0]) + " ? (" + l + " == 'true' ? true : " + l + " == 'false' ? false : " + raise("to_boolean(): lowercase argument must be 'true' or 'false'") + ") : " + invalidType("to_boolean")
}

// lowerLabelMatch is Kyverno's label_match(selector, labels): every key
// of the selector is in labels with an equal value.
func lowerLabelMatch(t *translator, a []string) string {
	k := t.name()
	return "type(" + a[0] + ") == map && type(" + a[1] + ") == map ? " + a[0] + ".all(" + k + ", " + k + " in " + a[1] + " && " + a[1] + "[" + k + "] == " + a[0] + "[" + k + "]) : " + invalidType("label_match")
}

// lowerPatternMatch is Kyverno's pattern_match(pattern, value):
// wildcard.Match of the pattern on the value, a string or a number
// written as regex_match writes it.
func lowerPatternMatch(_ *translator, a []string) string {
	return isString(a[0]) + " && (" + isString(a[1]) + " || " + isNumber(a[1]) + ") ? " + wild(a[0], kyvernoText(a[1])) + " : " + invalidType("pattern_match")
}

// lowerTruncate is Kyverno's truncate(s, n): the first n characters
// (runes) of s, n as Go's int() of the number; none below 1.
func lowerTruncate(_ *translator, a []string) string {
	n := "double(" + a[1] + ")"
	// Go's int() of a float64 beyond int64 is the platform's (amd64: the
	// least int64, so ""; arm64: the greatest, so s): an error here.
	return isString(a[0]) + " && " + isNumber(a[1]) + " ? (" + n + " <= -9.2e18 || " + n + " >= 9.2e18 ? " + raise("admitc does not truncate at a length beyond int64 in truncate()") + " : " +
		n + " < 1.0 ? '' : " + n + " >= double(size(" + a[0] + ")) ? " + a[0] + " : " + a[0] + ".substring(0, int(" + n + "))) : " + invalidType("truncate")
}

// lowerLookup is Kyverno's lookup(): a map's value at a string key (null
// when missing), or a list's element at a whole-number index (null out of
// range; a fraction, or an index beyond int64, is an error).
func lowerLookup(_ *translator, a []string) string {
	x, k := a[0], a[1]
	d := "double(" + k + ")"
	whole := d + " > -9.2e18 && " + d + " < 9.2e18 && double(int(" + d + ")) == " + d
	return "type(" + x + ") == map ? (" + isString(k) + " ? (" + k + " in " + x + " ? dyn(" + x + "[" + k + "]) : dyn(null)) : " + invalidType("lookup") + ") : " +
		isList(x) + " ? (" + isNumber(k) + " && " + whole + " ? (" + d + " < 0.0 || " + d + " > double(size(" + x + ") - 1) ? dyn(null) : dyn(" + x + "[int(" + d + ")])) : " + invalidType("lookup") + ") : " + invalidType("lookup")
}

// lowerItems is Kyverno's items(x, keyName, valueName): a map's entries by
// sorted key, or a list's elements by index (a float64), each as a map of
// the two names (one name for both holds the value, as Go's map literal
// keeps the last).
func lowerItems(t *translator, a []string) string {
	x, kn, vn, k, i := a[0], a[1], a[2], t.name(), t.name()
	entry := func(key, val string) string {
		return "(" + kn + " == " + vn + " ? {" + kn + ": dyn(" + val + ")} : {" + kn + ": dyn(" + key + "), " + vn + ": dyn(" + val + ")})"
	}
	return isString(kn) + " && " + isString(vn) + " ? (type(" + x + ") == map ? dyn(" + x + ".map(" + k + ", " + k + ").sort().map(" + k + ", " + entry(k, x+"["+k+"]") + ")) : " +
		isList(x) + " ? dyn(lists.range(size(" + x + ")).map(" + i + ", " + entry("double("+i+")", x+"["+i+"]") + ")) : " + invalidType("items") + ") : " + invalidType("items")
}

// decimalRegex is the decimal syntax of Go's strconv.ParseFloat.
const decimalRegex = `^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`

// lowerToNumber is to_number(): a number itself, a string ParseFloat reads
// as its float64, null for anything else (a string it does not read
// included). CEL's double() of a string is ParseFloat; what it reads
// differently from Kyverno's answer is an evaluation error here: a
// hexadecimal float, digits separated by _, infinity and NaN (not JSON
// numbers), and a decimal with an exponent of three digits or of over 300
// characters (ParseFloat's range error, null in Kyverno, is an error in
// CEL).
func lowerToNumber(_ *translator, a []string) string {
	v := a[0]
	unread := raise("admitc does not read this text as Go's strconv.ParseFloat does in to_number()")
	special := v + ".matches('(?i)^[+-]?(0x|inf|nan)') || " + v + ".contains('_')"
	outOfRange := v + ".matches('[eE][+-]?[0-9]{3,}') || size(" + v + ") > 300"
	return isNumber(v) + " ? dyn(double(" + v + ")) : " + isString(v) + " ? (" + special + " ? " + unread + " : " + v + ".matches(" + quote(decimalRegex) + ") ? (" +
		outOfRange + " ? " + unread + " : dyn(double(" + v + "))) : dyn(null)) : dyn(null)"
}

// exprefFunction lowers map(), max_by() and min_by(): the expression
// reference's expression runs on each element as the current node, a
// missing key in it giving null (the fork's NotFoundError is swallowed).
func (t *translator) exprefFunction(name string, ref, list gojmespath.ASTNode, cur value) (string, error) {
	if ref.NodeType != gojmespath.ASTExpRef || len(ref.Children) != 1 {
		return "", t.refuse("%s() takes an expression reference (&expr) there: correct the call", name)
	}
	l, err := t.concrete(list, cur, false)
	if err != nil {
		return "", err
	}
	key := func(e string) (string, error) {
		k, err := t.concrete(ref.Children[0], value{cel: e}, false)
		return "dyn(" + k + ")", err
	}
	v, x, y, k0 := t.name(), t.name(), t.name(), t.name()
	kx, err := key(x)
	if err != nil {
		return "", err
	}
	if name == "map" {
		// map keeps every value, null included.
		return bind(v, "dyn("+l+")", isList(v)+" ? dyn("+v+".map("+x+", "+kx+")) : "+invalidType(name)), nil
	}
	ky, err := key(y)
	if err != nil {
		return "", err
	}
	first, err := key(v + "[0]")
	if err != nil {
		return "", err
	}
	op := ">="
	if name == "min_by" {
		op = "<="
	}
	// The fork takes the first key's type for all; the first element whose
	// key no other key passes (strictly) is the answer.
	pick := func(of func(string) string) string {
		return "dyn(" + v + ".filter(" + x + ", " + v + ".all(" + y + ", " + of(kx) + " " + op + " " + of(ky) + "))[0])"
	}
	asDouble := func(k string) string { return "double(" + k + ")" }
	same := func(k string) string { return k }
	typed := bind(k0, first, isNumber(k0)+" ? ("+v+".all("+x+", "+isNumber(kx)+") ? "+pick(asDouble)+" : "+raise("invalid type, must be number")+") : "+
		isString(k0)+" ? ("+v+".all("+x+", "+isString(kx)+") ? "+pick(same)+" : "+raise("invalid type, must be string")+") : "+raise("invalid type, must be number of string"))
	return bind(v, "dyn("+l+")", isList(v)+" ? (size("+v+") == 0 ? dyn(null) : size("+v+") == 1 ? dyn("+v+"[0]) : "+typed+") : "+invalidType(name)), nil
}

// lowerArithmetic is Kyverno's add(), subtract(), multiply(), divide() and
// modulo() (pkg/engine/jmespath/arithmetic.go): each operand a number (a
// scalar), else a string that parses as a quantity, else one that parses
// as a Go duration, else an error. admitc computes what it can write
// exactly: two numbers (float64 arithmetic; modulo of whole numbers as
// int64, a zero divisor an error), and a quantity divided by a quantity
// (the quotient of their AsApproximateFloat64, which the API server's
// quantity library's asApproximateFloat() is). A result that is a quantity
// or a duration (its String() text), or an operand that is a duration,
// raises admitc's error; an operand of another type is Kyverno's error.
func lowerArithmetic(name string, a []string) string {
	x, y := a[0], a[1]
	dx, dy := "double("+x+")", "double("+y+")"
	numbers := isNumber(x) + " && " + isNumber(y)
	quantities := isString(x) + " && " + isString(y) + " && isQuantity(" + x + ") && isQuantity(" + y + ")"
	valid := "(" + isNumber(x) + " || " + isString(x) + ") && (" + isNumber(y) + " || " + isString(y) + ")"
	notWritten := raise("admitc does not compute " + name + "() of a quantity or a duration, whose result Kyverno writes as its text")
	zero := raise("Zero divisor passed to " + name + "()")
	var num string
	switch name {
	case "add":
		num = dx + " + " + dy
	case "subtract":
		num = dx + " - " + dy
	case "multiply":
		num = dx + " * " + dy
	case "divide":
		num = "(" + dy + " == 0.0 ? " + zero + " : " + dx + " / " + dy + ")"
	case "modulo":
		// Kyverno's int64() of a number beyond int64 is the platform's,
		// and no longer equals it: CEL's int() fails there too.
		whole := "double(int(" + dx + ")) == " + dx + " && double(int(" + dy + ")) == " + dy
		num = "(" + whole + " ? (int(" + dy + ") == 0 ? " + zero + " : double(int(" + dx + ") % int(" + dy + "))) : " + raise("Non-integer argument(s) passed to modulo()") + ")"
	}
	out := numbers + " ? " + num + " : "
	if name == "divide" {
		fx, fy := "quantity("+x+").asApproximateFloat()", "quantity("+y+").asApproximateFloat()"
		out += quantities + " ? (" + fy + " == 0.0 ? " + zero + " : " + fx + " / " + fy + ") : "
	}
	return out + valid + " ? " + notWritten + " : " + raise("invalid operand for "+name+"()")
}

// lowerSum is Kyverno's sum(list): the first element added to by each
// next one as add() adds (an empty list, or one not a list, an error; one
// element is itself, whatever its type). A list of numbers is summed as
// float64 in order (the list library's sum() adds in order from 0.0, and
// 0.0 + x is x); a sum of quantities or durations raises admitc's error,
// as add() does.
func lowerSum(t *translator, a []string) string {
	l, x := a[0], t.name()
	numbers := l + ".all(" + x + ", " + isNumber(x) + ")"
	texts := l + ".all(" + x + ", " + isNumber(x) + " || " + isString(x) + ")"
	return isList(l) + " ? (size(" + l + ") == 0 ? " + raise("at least one element in the array is required for sum()") + " : size(" + l + ") == 1 ? dyn(" + l + "[0]) : " +
		numbers + " ? dyn(" + l + ".map(" + x + ", double(" + x + ")).sum()) : " + texts + " ? " + raise("admitc does not compute sum() of quantities or durations, whose result Kyverno writes as its text") + " : " + raise("invalid operand for sum()") + ") : " + invalidType("sum")
}

// lowerAvg is the fork's avg(list of numbers): their float64 sum, in
// order from 0.0, over their count; the NaN of an empty list raises
// admitc's error.
func lowerAvg(t *translator, a []string) string {
	l, x := a[0], t.name()
	return isList(l) + " && " + l + ".all(" + x + ", " + isNumber(x) + ") ? (size(" + l + ") == 0 ? " + raise("admitc does not compute avg() of an empty list (NaN)") + " : " +
		l + ".map(" + x + ", double(" + x + ")).sum() / double(size(" + l + "))) : " + invalidType("avg")
}

// lowerMerge is the fork's merge(map, ...): every key of the maps, with
// the value of the last map holding it. CEL builds it from the list of
// keys, each once (a key is taken from the last map holding it), with
// transformMapEntry (Kubernetes 1.32).
func lowerMerge(t *translator, a []string) string {
	var keys []string
	for i, m := range a {
		k := t.name()
		later := ""
		for _, n := range a[i+1:] {
			later += " && !(" + k + " in " + n + ")"
		}
		if later == "" {
			keys = append(keys, m+".map("+k+", "+k+")")
		} else {
			keys = append(keys, m+".map("+k+", "+k+").filter("+k+", true"+later+")")
		}
	}
	i, k := t.name(), t.name()
	value := "dyn(" + a[0] + "[" + k + "])"
	for _, m := range a[1:] {
		value = k + " in " + m + " ? dyn(" + m + "[" + k + "]) : " + value
	}
	var maps []string
	for _, m := range a {
		maps = append(maps, "type("+m+") == map")
	}
	return strings.Join(maps, " && ") + " ? dyn((" + strings.Join(keys, " + ") + ").transformMapEntry(" + i + ", " + k + ", {" + k + ": " + value + "})) : " + invalidType("merge")
}
