package typed

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/compiler/kyverno/pattern"
	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/internal/kubeschema"
)

// A condition's operator on a key whose type the schema fixes, with a
// literal value, is written as a person writes it: x == 'NodePort',
// x in ['CREATE', 'UPDATE'], x >= 8000 && x <= 9000. Each predicate is
// derived from Kyverno's operator semantics (the exact translation's
// Operator, conditions/operators.go) for the key's type and the literal,
// and checked against that exact predicate on probe values before it is
// used: the literals, their neighbours, quantities, durations, wildcards,
// the empty value, numbers around the fmt text's exponent form. A
// predicate that disagrees on any probe is not used (the rule keeps its
// exact translation).

// operator is one condition's operator and literal value.
type operator struct {
	op  string
	raw any
	// val is the value as the exact translation's CEL.
	val string
}

func newOperator(op string, raw any) (operator, error) {
	fresh := 0
	val, err := conditions.Value(raw, conditions.Scope{}, &fresh)
	if err != nil {
		return operator{}, notTyped("the value: %v", err)
	}
	return operator{op: strings.ToLower(op), raw: raw, val: val}, nil
}

// exact is the exact translation's predicate over the key x.
func (o operator) exact() (string, error) {
	out, err := conditions.Operator(o.op, "x", o.val, "{{ x }}", o.raw)
	if err != nil {
		return "", notTyped("%v", err)
	}
	return out, nil
}

func (o operator) isIn() bool {
	switch o.op {
	case "anyin", "allin", "anynotin", "allnotin":
		return true
	}
	return false
}

func (o operator) negated() bool { return strings.Contains(o.op, "not") }

// scalar is the typed predicate over x, a present value of shape; plain
// says x never holds a wildcard character.
func (o operator) scalar(shape kubeschema.Shape, plain bool) (string, error) {
	var out string
	var err error
	switch shape {
	case kubeschema.Boolean:
		out, err = o.boolean()
	case kubeschema.String:
		out, err = o.stringScalar(plain)
	case kubeschema.Integer:
		out, err = o.integerScalar()
	default:
		return "", notTyped("an operator on a %s", shape)
	}
	if err != nil {
		return "", err
	}
	exact, err := o.exact()
	if err != nil {
		return "", err
	}
	if err := agree(exact, out, probes(shape, o.raw, plain)); err != nil {
		return "", err
	}
	return out, nil
}

// boolean is the exact predicate evaluated on true and on false.
func (o operator) boolean() (string, error) {
	exact, err := o.exact()
	if err != nil {
		return "", err
	}
	onTrue, err := evalBool(exact, "x", true)
	if err != nil {
		return "", notTyped("%v", err)
	}
	onFalse, err := evalBool(exact, "x", false)
	if err != nil {
		return "", notTyped("%v", err)
	}
	switch {
	case onTrue && onFalse:
		return "true", nil
	case onTrue:
		return "x", nil
	case onFalse:
		return "!x", nil
	}
	return "false", nil
}

func (o operator) stringScalar(plain bool) (string, error) {
	switch o.op {
	case "equal", "equals", "notequal", "notequals":
		s, ok := o.raw.(string)
		if !ok {
			return o.constant(kubeschema.String)
		}
		eq, err := stringEquals(s)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(o.op, "not") {
			return "!(" + eq + ")", nil
		}
		return eq, nil
	case "greaterthan", "greaterthanorequals", "lessthan", "lessthanorequals":
		if s, ok := o.raw.(string); ok {
			if q, ok := quantityOrder(o.op, s); ok {
				return q, nil
			}
		}
	}
	if !o.isIn() {
		return o.constant(kubeschema.String)
	}
	vals, symmetric, err := o.inValues()
	if err != nil {
		return "", err
	}
	found := stringFound(vals, symmetric && !plain)
	if o.negated() {
		return "!(" + found + ")", nil
	}
	return found, nil
}

// constant is the exact predicate when it is the same on every probe.
func (o operator) constant(shape kubeschema.Shape) (string, error) {
	exact, err := o.exact()
	if err != nil {
		return "", err
	}
	var first *bool
	for _, p := range probes(shape, o.raw, false) {
		got, err := evalBool(exact, "x", p)
		if err != nil || first != nil && got != *first {
			return "", notTyped("the %s operator on a %s", o.op, shape)
		}
		first = &got
	}
	return strconv.FormatBool(*first), nil
}

// stringEquals is Kyverno's Equals of a string key x and the literal s:
// a quantity compares as one, a wildcard matches (a key that is a
// quantity never matches a value that is not), else the texts are equal.
func stringEquals(s string) (string, error) {
	if conditions.IsDurationText(s) {
		return "", notTyped("Equals with the duration %q", s)
	}
	if _, err := resource.ParseQuantity(s); err == nil {
		return "isQuantity(x) && quantity(x) == quantity(" + celenv.Quote(s) + ")", nil
	}
	if !strings.ContainsAny(s, "*?") {
		return "x == " + celenv.Quote(s), nil
	}
	m := pattern.WildcardMatch(s, "x")
	if quantityImpossible(s) {
		return m, nil
	}
	return "!isQuantity(x) && " + m, nil
}

// quantityOrder is Kyverno's GreaterThan[OrEquals] and LessThan[OrEquals]
// of a string key x and the literal quantity s that is not a duration
// (Kyverno compares durations first): a key that is a quantity compares
// as one. What it says of a key that is not a quantity is checked
// against the exact predicate on the probes (agree).
func quantityOrder(op, s string) (string, bool) {
	if conditions.IsDurationText(s) {
		return "", false
	}
	if _, err := resource.ParseQuantity(s); err != nil {
		return "", false
	}
	q := "quantity(" + celenv.Quote(s) + ")"
	cmp := map[string]string{"greaterthan": "quantity(x).isGreaterThan(" + q + ")", "greaterthanorequals": "!quantity(x).isLessThan(" + q + ")",
		"lessthan": "quantity(x).isLessThan(" + q + ")", "lessthanorequals": "!quantity(x).isGreaterThan(" + q + ")"}[op]
	return "isQuantity(x) && " + cmp, true
}

// quantityImpossible says no quantity matches the wildcard pattern s: a
// character it requires is none a quantity has.
func quantityImpossible(s string) bool {
	return strings.ContainsFunc(strings.NewReplacer("*", "", "?", "").Replace(s), func(r rune) bool {
		return !strings.ContainsRune("0123456789.+-eEinumkKMGTP", r)
	})
}

// inValues are the values an In operator compares a key with, as text
// (fmt.Sprint of numbers and booleans); symmetric says a key that is a
// wildcard pattern also matches them (a list value: Kyverno's
// anyKeyExistsInArray tries both ways, a single string only one).
func (o operator) inValues() ([]string, bool, error) {
	switch v := o.raw.(type) {
	case []any:
		var out []string
		for _, e := range v {
			switch t := e.(type) {
			case string:
				out = append(out, t)
			case bool:
				out = append(out, strconv.FormatBool(t))
			case float64:
				out = append(out, fmt.Sprint(t))
			case int64:
				out = append(out, fmt.Sprint(float64(t)))
			case int:
				out = append(out, fmt.Sprint(float64(t)))
			default:
				return nil, false, notTyped("an In value of type %T", e)
			}
		}
		return out, true, nil
	case string:
		if conditions.IsRange(v) {
			return nil, false, notTyped("a range on a string key")
		}
		if json.Valid([]byte(v)) {
			var arr []string
			if err := json.Unmarshal([]byte(v), &arr); err != nil {
				return nil, false, notTyped("a JSON value %q", v)
			}
			// The text itself is also tried as a pattern.
			return append(arr, v), false, nil
		}
		return []string{v}, false, nil
	}
	return nil, false, notTyped("an In value of type %T", o.raw)
}

// stringFound is a string x matching one of vals: equal, or matching a
// value that is a wildcard pattern, or (symmetric) x, a pattern, matching
// a value.
func stringFound(vals []string, symmetric bool) string {
	var plainVals, parts []string
	seen := map[string]bool{}
	for _, v := range vals {
		if seen[v] {
			continue
		}
		seen[v] = true
		if strings.ContainsAny(v, "*?") {
			parts = append(parts, pattern.WildcardMatch(v, "x"))
			continue
		}
		plainVals = append(plainVals, celenv.Quote(v))
	}
	switch len(plainVals) {
	case 0:
	case 1:
		parts = append([]string{"x == " + plainVals[0]}, parts...)
	default:
		parts = append([]string{"x in [" + strings.Join(plainVals, ", ") + "]"}, parts...)
	}
	if symmetric {
		parts = append(parts, keyPattern(vals))
	}
	if len(parts) == 0 {
		return "false"
	}
	return strings.Join(parts, " || ")
}

// keyPattern is x, read as a wildcard pattern, matching one of vals: x
// can only match if each of its characters is a wildcard or one of the
// values' characters, which are the only ones escaped.
func keyPattern(vals []string) string {
	chars := map[rune]bool{'*': true, '?': true}
	for _, v := range vals {
		for _, r := range v {
			chars[r] = true
		}
	}
	var class strings.Builder
	var esc string
	runes := make([]rune, 0, len(chars))
	for r := range chars {
		runes = append(runes, r)
	}
	sortRunes(runes)
	for _, r := range runes {
		if strings.ContainsRune(`\]^-[`, r) {
			class.WriteRune('\\')
		}
		class.WriteRune(r)
		if r != '*' && r != '?' && strings.ContainsRune(`\.+()|[]{}^$`, r) {
			esc += ".replace(" + celenv.Quote(string(r)) + ", " + celenv.Quote(`\`+string(r)) + ")"
		}
	}
	var quoted []string
	for _, v := range vals {
		quoted = append(quoted, celenv.Quote(v))
	}
	return "x.matches(" + celenv.Quote("^["+class.String()+"]*$") + ") && [" + strings.Join(quoted, ", ") + "].exists(v, v.matches('(?s)^' + x" + esc +
		".replace('*', '.*').replace('?', '.') + '$'))"
}

func sortRunes(rs []rune) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j] < rs[j-1]; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// maxPlain is the magnitude from which Go's fmt writes a float64 in
// exponent form (1e+06): Kyverno's text of a number.
const maxPlain = 1e6

func (o operator) integerScalar() (string, error) {
	switch o.op {
	case "equal", "equals", "notequal", "notequals":
		n, ok := numberOf(o.raw)
		eq := "false"
		if ok {
			eq = compareNumber("==", n)
		}
		if strings.HasPrefix(o.op, "not") {
			return "!(" + eq + ")", nil
		}
		return eq, nil
	case "greaterthan", "greaterthanorequals", "lessthan", "lessthanorequals":
		if s, ok := o.raw.(string); ok && conditions.IsDurationText(s) {
			return "", notTyped("a comparison with the duration %q", s)
		}
		n, ok := numberOf(o.raw)
		if !ok {
			return "false", nil
		}
		op := map[string]string{"greaterthan": ">", "greaterthanorequals": ">=", "lessthan": "<", "lessthanorequals": "<="}[o.op]
		return compareNumber(op, n), nil
	}
	if !o.isIn() {
		return o.constant(kubeschema.Integer)
	}
	in, err := o.integerIn(false)
	if err != nil {
		return "", err
	}
	if o.negated() {
		return "!(" + in + ")", nil
	}
	return in, nil
}

// numberOf is the number a literal is, as Kyverno's numeric operators
// read it (a number, or a string strconv.ParseFloat reads).
func numberOf(raw any) (float64, bool) {
	switch v := raw.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case string:
		if !conditions.IsFloatText(v) {
			return 0, false
		}
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil || math.IsInf(f, 0)
	}
	return 0, false
}

// compareNumber compares the integer x with n.
func compareNumber(op string, n float64) string {
	if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
		return "x " + op + " " + strconv.FormatInt(int64(n), 10)
	}
	if math.IsNaN(n) {
		return strconv.FormatBool(op == "!=")
	}
	return "double(x) " + op + " " + strconv.FormatFloat(n, 'g', -1, 64)
}

// integerIn is an integer x in the value (notRange: the value's range
// written with '!-', as AnyNotIn on a list reads it).
func (o operator) integerIn(notRange bool) (string, error) {
	if s, ok := o.raw.(string); ok && conditions.IsRange(s) {
		lo, hi, ok := intRange(s)
		if !ok {
			return "", notTyped("the range %q", s)
		}
		if notRange {
			return "x < " + strconv.FormatInt(lo, 10) + " || x > " + strconv.FormatInt(hi, 10), nil
		}
		return "x >= " + strconv.FormatInt(lo, 10) + " && x <= " + strconv.FormatInt(hi, 10), nil
	}
	vals, _, err := o.inValues()
	if err != nil {
		return "", err
	}
	var ns []string
	for _, v := range vals {
		switch {
		case strings.ContainsAny(v, "*?"):
			return "", notTyped("a wildcard value for an integer key")
		case strings.Contains(v, "e+") || strings.Contains(v, "e-"):
			return "", notTyped("a value in exponent form")
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != v || math.Abs(float64(n)) >= maxPlain {
			// No integer's text is v.
			continue
		}
		ns = append(ns, v)
	}
	switch len(ns) {
	case 0:
		return "false", nil
	case 1:
		return "x == " + ns[0], nil
	}
	return "x in [" + strings.Join(ns, ", ") + "]", nil
}

var plainRange = regexp.MustCompile(`^(-?\d+)-(-?\d+)$`)

func intRange(s string) (int64, int64, bool) {
	m := plainRange.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseInt(m[1], 10, 64)
	hi, err2 := strconv.ParseInt(m[2], 10, 64)
	return lo, hi, err1 == nil && err2 == nil
}

// list is the typed predicate on a present list key of elements of
// shape: elem over x, an element, and whether every element must hold
// (else one).
func (o operator) list(shape kubeschema.Shape, plain bool) (elem string, all bool, err error) {
	switch o.op {
	case "anyin", "allin", "anynotin", "allnotin":
	default:
		c, err := o.listConstant(shape)
		return c, false, err
	}
	if _, ok := o.raw.(string); !ok {
		if _, ok := o.raw.([]any); !ok {
			return "", false, notTyped("an In value of type %T on a list", o.raw)
		}
	}
	var hit string
	switch shape {
	case kubeschema.String:
		vals, _, err := o.inValues()
		if err != nil {
			return "", false, err
		}
		hit = stringFound(vals, !plain)
	case kubeschema.Integer:
		hit, err = o.integerIn(false)
		if err != nil {
			return "", false, err
		}
		if o.op == "anynotin" {
			if s, ok := o.raw.(string); ok && conditions.IsRange(s) {
				hit, err = o.integerIn(true)
				if err != nil {
					return "", false, err
				}
				hit = "!(" + hit + ")"
			}
		}
	default:
		return "", false, notTyped("an In operator on a list of %s", shape)
	}
	all = strings.HasPrefix(o.op, "all")
	elem = hit
	if o.negated() {
		elem = "!(" + hit + ")"
	}
	quant := "exists"
	if all {
		quant = "all"
	}
	exact, err := o.exact()
	if err != nil {
		return "", false, err
	}
	typed := "x." + quant + "(x, " + elem + ")"
	if err := agree(exact, typed, listProbes(shape, o.raw, plain)); err != nil {
		return "", false, err
	}
	return elem, all, nil
}

// listConstant is an operator other than In on a present list: the same
// on every list (Kyverno compares a list with a scalar value only as
// different, Equals false and NotEquals true), as "true" or "false".
func (o operator) listConstant(shape kubeschema.Shape) (string, error) {
	exact, err := o.exact()
	if err != nil {
		return "", err
	}
	var first *bool
	for _, p := range listProbes(shape, o.raw, false) {
		got, err := evalBool(exact, "x", p)
		if err != nil || first != nil && got != *first {
			return "", notTyped("the %s operator on a list", o.op)
		}
		first = &got
	}
	return strconv.FormatBool(*first), nil
}

// agree checks the typed predicate against the exact one on the probes:
// equal results wherever the exact one does not fail (where it fails, it
// is the exact translation's limit, not Kyverno's answer).
func agree(exact, typed string, probes []any) error {
	key := exact + "\x00" + typed + "\x00" + fmt.Sprintf("%#v", probes)
	if err, ok := agreed.Load(key); ok {
		return err.(agreement).err
	}
	err := agreeOnProbes(exact, typed, probes)
	agreed.Store(key, agreement{err})
	return err
}

func agreeOnProbes(exact, typed string, probes []any) error {
	env, err := evalEnv()
	if err != nil {
		return err
	}
	prg := func(src string) (func(any) (bool, error), error) {
		a, iss := env.Parse(src) // unchecked: the probes are dynamic values, and checking the exact predicate costs most of the time
		if iss.Err() != nil {
			return nil, iss.Err()
		}
		p, err := env.Program(a)
		if err != nil {
			return nil, err
		}
		return func(v any) (bool, error) {
			out, _, err := p.Eval(map[string]any{"x": v})
			if err != nil {
				return false, err
			}
			b, ok := out.Value().(bool)
			if !ok {
				return false, fmt.Errorf("not a boolean")
			}
			return b, nil
		}, nil
	}
	ex, err := prg(exact)
	if err != nil {
		return notTyped("the exact predicate: %v", err)
	}
	ty, err := prg(typed)
	if err != nil {
		return notTyped("the typed predicate %s: %v", typed, err)
	}
	for _, p := range probes {
		want, err := ex(p)
		if err != nil {
			continue
		}
		got, err := ty(p)
		if err != nil || got != want {
			return notTyped("the typed predicate %s decides %#v as %v, Kyverno as %v", typed, p, got, want)
		}
	}
	return nil
}

// probes are the values of shape a predicate is checked on.
func probes(shape kubeschema.Shape, raw any, plain bool) []any {
	switch shape {
	case kubeschema.Boolean:
		return []any{true, false}
	case kubeschema.Integer:
		return intProbes(raw)
	}
	return stringProbes(raw, plain)
}

func intProbes(raw any) []any {
	set := map[int64]bool{}
	add := func(n int64) {
		for _, d := range []int64{-1, 0, 1} {
			set[n+d] = true
		}
	}
	for _, n := range []int64{0, 999999, -999999, 1000000, -1000000, 1234567, 2147483647, -2147483648, 65535, 32768} {
		add(n)
	}
	for _, s := range literalTexts(raw) {
		for _, m := range regexp.MustCompile(`-?\d+`).FindAllString(s, -1) {
			if n, err := strconv.ParseInt(m, 10, 64); err == nil {
				add(n)
			}
		}
	}
	out := make([]any, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sortProbes(out)
	return out
}

func stringProbes(raw any, plain bool) []any {
	base := []string{"", "a", "x", "0", "1", "-1", "1.5", "10", "1Gi", "100m", "1m", "1h", "2s", "1e3", "true", "false", "null", "<nil>", "[a b]", "ALL", "all"}
	if !plain {
		base = append(base, "*", "?", "a*", "*a", "?*")
	}
	set := map[string]bool{}
	for _, s := range base {
		set[s] = true
	}
	for _, s := range literalTexts(raw) {
		for _, v := range []string{s, s + "x", "x" + s, strings.ToUpper(s), strings.ToLower(s),
			strings.NewReplacer("*", "", "?", "a").Replace(s), strings.NewReplacer("*", "abc", "?", "z").Replace(s)} {
			set[v] = true
		}
		if len(s) > 1 {
			set[s[:len(s)-1]] = true
			set[s[1:]] = true
			if !plain {
				set[s[:len(s)-1]+"*"] = true
				set["*"+s[1:]] = true
				set[s[:1]+"?"+s[2:]] = true
			}
		}
		for _, m := range regexp.MustCompile(`\d+`).FindAllString(s, -1) {
			n, _ := strconv.Atoi(m)
			for _, d := range []int{-1, 0, 1} {
				t := strconv.Itoa(n + d)
				set[t], set[t+"m"], set[t+"Gi"], set[t+"s"] = true, true, true, true
			}
		}
	}
	out := make([]any, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sortProbes(out)
	return out
}

// listProbes are lists of probe values: empty, each probe alone, and
// pairs of a few.
func listProbes(shape kubeschema.Shape, raw any, plain bool) []any {
	ps := probes(shape, raw, plain)
	out := []any{[]any{}}
	for _, p := range ps {
		out = append(out, []any{p})
	}
	few := ps
	if len(few) > 8 {
		few = few[:8]
	}
	// The literals' own probes come first among the pairs too.
	lits := literalTexts(raw)
	if shape == kubeschema.String && len(lits) > 0 {
		few = append([]any{lits[0]}, few...)
	}
	for _, a := range few {
		for _, b := range few {
			out = append(out, []any{a, b})
		}
	}
	return out
}

// literalTexts are the strings of a literal value (numbers as text).
func literalTexts(raw any) []string {
	switch v := raw.(type) {
	case string:
		return []string{v}
	case float64, int64, int, bool:
		return []string{fmt.Sprint(v)}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, literalTexts(e)...)
		}
		return out
	}
	return nil
}

func sortProbes(ps []any) {
	key := func(p any) string { return fmt.Sprintf("%T %v", p, p) }
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && key(ps[j]) < key(ps[j-1]); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}
