package variants

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// numberWithUnit splits a quantity or duration into its number and unit
// (100m, 1Gi, 1h, -1).
var numberWithUnit = regexp.MustCompile(`^([+-]?\d+(?:\.\d+)?)([A-Za-z]*)$`)

// rangeOperand is a range condition, a-b or a!-b, as Kyverno writes them.
var rangeOperand = regexp.MustCompile(`^([+-]?\d+(?:\.\d+)?[A-Za-z]*)!?-([+-]?\d+(?:\.\d+)?[A-Za-z]*)$`)

// boundaries are the values at and around each scalar: for a number n,
// n-1, n, n+1 and n+0.5 as numbers and as strings; for a boolean, both and
// their strings; for a string, its operands (after the operators >=, <=,
// >, <, !, the alternatives |, the conjunctions &, the ends of a range)
// as they are, with a suffix, with their wildcards filled in, and, for a
// number with a unit, that number minus one, as is and plus one with the
// unit and as a bare number. Duplicates are dropped; the order is fixed.
func boundaries(scalars []any) []any {
	var out []any
	seen := map[string]bool{}
	add := func(vs ...any) {
		for _, v := range vs {
			if k := render(v); !seen[k] {
				seen[k] = true
				out = append(out, v)
			}
		}
	}
	for _, s := range scalars {
		switch t := s.(type) {
		case string:
			add(t)
			for _, o := range operands(t) {
				add(operandValues(o)...)
			}
		case bool:
			add(t, !t, strconv.FormatBool(t), strconv.FormatBool(!t))
		default:
			if n, ok := number(s); ok {
				add(numberValues(n)...)
			}
		}
	}
	return out
}

// number reads any Go number as a float64.
func number(v any) (float64, bool) {
	switch t := v.(type) {
	case int:
		return float64(t), true
	case int32:
		return float64(t), true
	case int64:
		return float64(t), true
	case float32:
		return float64(t), true
	case float64:
		return t, true
	}
	return 0, false
}

// numberValues are n-1, n, n+1 (int64 when whole), n+0.5, and their strings.
func numberValues(n float64) []any {
	var out []any
	for _, d := range []float64{-1, 0, 1} {
		out = append(out, jsonNumber(n+d), strconv.FormatFloat(n+d, 'f', -1, 64))
	}
	return append(out, n+0.5)
}

// jsonNumber is n as the API server decodes it: int64 when whole.
func jsonNumber(n float64) any {
	if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
		return int64(n)
	}
	return n
}

// operands splits a scalar pattern into the values its conditions compare with.
func operands(s string) []string {
	var out []string
	for _, alt := range strings.Split(s, "|") {
		for _, c := range strings.Split(alt, "&") {
			c = strings.TrimSpace(c)
			for _, op := range []string{">=", "<=", ">", "<", "!"} {
				if strings.HasPrefix(c, op) {
					c = strings.TrimSpace(c[len(op):])
					break
				}
			}
			if m := rangeOperand.FindStringSubmatch(c); m != nil {
				out = append(out, m[1], m[2])
				continue
			}
			out = append(out, c)
		}
	}
	return out
}

// operandValues are the strings and numbers at and around one operand.
func operandValues(o string) []any {
	out := []any{o, o + "x"}
	if strings.ContainsAny(o, "*?") {
		empty := strings.NewReplacer("*", "", "?", "y").Replace(o)
		out = append(out, empty, strings.NewReplacer("*", "abc", "?", "z").Replace(o), "a"+empty)
	}
	m := numberWithUnit.FindStringSubmatch(o)
	if m == nil {
		return out
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	for _, d := range []float64{-1, 0, 1} {
		out = append(out, strconv.FormatFloat(n+d, 'f', -1, 64)+m[2])
		if m[2] != "" {
			out = append(out, strconv.FormatFloat(n+d, 'f', -1, 64))
		}
		out = append(out, jsonNumber(n+d))
	}
	return append(out, n+0.5)
}

// boundaryMutations write every boundary value at each of the caller's
// paths (mapped onto obj's pods) and, for the existing scalars of obj
// (identity aside), the boundaries of the same JSON type.
func boundaryMutations(obj map[string]any, wanted []path, values []any) []mutation {
	var out []mutation
	seen := map[string]bool{}
	for _, w := range wanted {
		for _, mapped := range pathsIn(obj, w) {
			for _, p := range expand(obj, mapped) {
				if seen[p.String()] || touchesIdentity(p) {
					continue
				}
				seen[p.String()] = true
				for _, v := range values {
					out = append(out, setTo(kindBoundary, p, v))
				}
			}
		}
	}
	for _, p := range paths(obj, nil) {
		cur, _ := get(obj, p)
		if seen[p.String()] || touchesIdentity(p) || !isScalar(cur) {
			continue
		}
		for _, v := range values {
			if sameType(cur, v) {
				out = append(out, setTo(kindBoundary, p, v))
			}
		}
	}
	return out
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any, nil:
		return false
	}
	return true
}

// sameType says whether a and b are both strings, both numbers or both booleans.
func sameType(a, b any) bool {
	_, an := number(a)
	_, bn := number(b)
	_, as := a.(string)
	_, bs := b.(string)
	_, ab := a.(bool)
	_, bb := b.(bool)
	return an && bn || as && bs || ab && bb
}
