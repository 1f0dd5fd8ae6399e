//go:build kyverno

package pattern

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPatternValuesReadAtAdmissionAsKyverno matches every resource value
// against every value a {{ }} variable may substitute into a pattern, by
// Kyverno's MatchPattern on the substituted pattern and by the
// translation, which reads the value at admission: both agree, or the
// translation raises NotReadAtAdmission (a value Kyverno reads as an
// operator, range, quantity, duration or number, or one of another type).
func TestPatternValuesReadAtAdmissionAsKyverno(t *testing.T) {
	substituted := []any{
		"web", "web-1", "nginx", "", "*", "web*", "w?b", "?*", "*-1", "a b", "w*b*", "x.y", "a\\Eb", `\E*`, "ß", "web\n",
		" web", "web ", "\u00a0web", "web\u00a0", "1", "10", "0", "1.5", ".5", "+1", "-1", "1-5", "5!-6", ">1", "<=2", "!web", "!",
		"Ki", "M", "m", "Mi5", "e3", "E", "i", "kk", "ki", "1Gi", "10s", "a|b", "a & b", "true", "false", "TRUE", "null", "*E+01",
		"1team", "123-*", "5-", "1e3x", "10sx", "1h30m", "0", "+", "-web", "1-a", "1!-2", "1Kix", "web-*", "µs", "1µs", "?",
		"100m", "128Mi", "0.5", "1e3", "1000", "500m", "0s", "90m", "1.5h", "2.500000", "2.5", "1E+01",
		int64(10), 2.5, true, nil, map[string]any{"x": "y"}, []any{"web"}, int64(0), int64(1), false, 1.0, 0.5, int64(-3),
	}
	values := []any{
		"web", "web-1", "nginx", "", "*", "w?b", "wxb", "a b", "x.y", "xzy", "a\\Eb", `\E`, "ß", "1", "10", "0", "+1", "1.5",
		"Ki", "M", "10s", "TRUE", "true", "web\n", "1team", "123-4", "web-1", "1h30m", "5400s", "1000m", "1", "100m", "0.1", "128Mi", "134217728", "6000s", "1k", "0", "false", "", "0.5", "-3", "1e0", int64(2), 0.0, 0.5, int64(10), int64(1), int64(0), int64(-1), 2.5, 1.0, 100.0, true, false, nil,
		map[string]any{"x": "y"}, []any{}, []any{"web"}, []any{"web", "x"}, []any{int64(10)},
	}
	pattern := map[string]any{"a": "{{ request.object.s }}"}
	e, err := TranslateWith(pattern, "object", func(v string) (string, error) {
		require.Equal(t, "{{ request.object.s }}", v)
		return "object.s", nil
	})
	require.NoError(t, err)
	eval := compileString(t, e.Result)
	agree, raised := 0, 0
	outcomes := map[string]int{}
	for _, s := range substituted {
		for _, v := range values {
			resource := map[string]any{"s": s, "a": v}
			// Kyverno substitutes from its JSON context: a number is a float64.
			want, wantPath := matchPattern(resource, map[string]any{"a": asJSON(s)})
			got, err := eval(resource)
			if err != nil {
				require.Contains(t, err.Error(), NotReadAtAdmission, "s=%#v v=%#v", s, v)
				raised++
				continue
			}
			outcome, path, _ := strings.Cut(got, " ")
			if assert.Equal(t, want, outcome, "s=%#v v=%#v", s, v) && want == Fail {
				assert.Equal(t, wantPath, path, "s=%#v v=%#v", s, v)
			}
			agree++
			outcomes[want]++
		}
	}
	t.Logf("%d values × %d substituted: %d decided as Kyverno (%v), %d raise admitc's error", len(values), len(substituted), agree, outcomes, raised)
	assert.Greater(t, outcomes[Pass], 40, "too few matches to prove anything")
	assert.Greater(t, outcomes[Fail], 400, "too few mismatches to prove anything")
}

// asJSON is v as Kyverno's JSON context holds it: a number as a float64.
func asJSON(v any) any {
	if n, ok := v.(int64); ok {
		return float64(n)
	}
	return v
}
