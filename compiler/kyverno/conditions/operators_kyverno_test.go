//go:build kyverno

package conditions

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	"github.com/kyverno/kyverno/pkg/config"
	enginecontext "github.com/kyverno/kyverno/pkg/engine/context"
	"github.com/kyverno/kyverno/pkg/engine/jmespath"
	"github.com/kyverno/kyverno/pkg/engine/variables"
	"github.com/stretchr/testify/require"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/internal/celenv"
)

// rangeBounds are the pieces of generated range values and of the keys
// checked against them: numbers at the bounds, signs (operator.InRangeRegex
// reads '-', '+' and '|'), and the units of quantities and durations, and
// letters that are neither.
var (
	rangeNumbers = []string{"0", "1", "5", "8", "10", "80", "1.5", "0.5", "8000", "8080", "9000", "1024"}
	rangeSigns   = []string{"", "", "", "-", "+", "|"}
	rangeUnits   = []string{"", "", "", "Mi", "Gi", "Ki", "m", "s", "h", "ms", "k", "x", "e"}
)

// rangeText is a seeded bound: a sign, a number and a unit.
func rangeText(rng *rand.Rand) string {
	return rangeSigns[rng.Intn(len(rangeSigns))] + rangeNumbers[rng.Intn(len(rangeNumbers))] + rangeUnits[rng.Intn(len(rangeUnits))]
}

// inOperatorValue is the value of a seeded In condition: mostly a range
// ("lo-hi", both bounds of the same unit or not), and the other forms a
// literal takes (a not-in-range "lo!-hi", a plain or wildcard string, JSON
// text, a list).
func inOperatorValue(rng *rand.Rand) any {
	lo, hi := rangeText(rng), rangeText(rng)
	switch n := rng.Intn(20); {
	case n < 8:
		return lo + "-" + hi
	case n < 12:
		num := func() string { return rangeNumbers[rng.Intn(len(rangeNumbers))] }
		u := rangeUnits[rng.Intn(len(rangeUnits))]
		return num() + u + "-" + num() + u
	case n < 14:
		return "8000-9000"
	case n == 14:
		return lo + "!-" + hi
	case n == 15:
		return lo
	case n == 16:
		return "80*"
	case n == 17:
		return `["80", "8080"]`
	case n == 18:
		return []any{"80", "9000-9100", 8080}
	}
	return "-10--8"
}

// inOperatorKey is a seeded key: a bound's text, a number, a bool, null,
// a map, or a list of these.
func inOperatorKey(rng *rand.Rand, depth int) any {
	switch n := rng.Intn(20); {
	case n < 8:
		return rangeText(rng)
	case n < 11:
		return []any{0, 5, 80, 8000, 8080, 9000, 9001, -9, 1.5, 0.5, 1024}[rng.Intn(11)]
	case n == 11:
		return rng.Intn(2) == 0
	case n == 12:
		return nil
	case n == 13:
		return map[string]any{"a": "1"}
	case n == 14:
		return []any{"8000-9000", "-10--8", "", "abc", "1e3", "90s"}[rng.Intn(6)]
	case depth == 0:
		var l []any
		for i := rng.Intn(4); i > 0; i-- {
			l = append(l, inOperatorKey(rng, 1))
		}
		if l == nil {
			l = []any{}
		}
		return l
	}
	return rangeText(rng)
}

// TestInOperatorsAsKyverno evaluates AnyIn, AllIn, AnyNotIn and AllNotIn
// conditions whose key reads a seeded object and whose value is a seeded
// literal (ranges above all) through Kyverno's variables.Evaluate and
// through admitc's CEL: the same decision on every pair. admitc's own
// refusal at evaluation (a number it does not write as Go's fmt does) is
// counted, not compared.
func TestInOperatorsAsKyverno(t *testing.T) {
	jp := jmespath.New(config.NewDefaultConfiguration(false))
	cc := celenv.NewCompiler(celenv.RuntimeVersion())
	rng := rand.New(rand.NewSource(23))
	counts := map[string]int{}
	for n := 0; n < 1500; n++ {
		op := []string{"AnyIn", "AllIn", "AnyNotIn", "AllNotIn"}[rng.Intn(4)]
		value := inOperatorValue(rng)
		c := kyvernov1.Condition{Operator: kyvernov1.ConditionOperator(op)}
		c.SetKey("{{ request.object.k }}")
		c.SetValue(value)
		fresh := 0
		expr, err := condition(c, Scope{}, &fresh, "any[0]")
		require.NoError(t, err, "%s %v", op, value)
		res := cc.CompileCELExpression(boolExpr(expr), plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
		require.Nil(t, res.Error, "%s %v: %s", op, value, expr)
		for i := 0; i < 20; i++ {
			obj := map[string]any{"k": inOperatorKey(rng, 0)}
			want, out, data, gotErr := evaluateBoth(t, jp, c, res.Program, obj)
			if gotErr != nil && strings.Contains(gotErr.Error(), "admitc does not") {
				counts["admitc refuses at evaluation"]++
				continue
			}
			require.NoError(t, gotErr, "%s %v on %s", op, value, data)
			require.Equal(t, want, out.Value(), "%s %v on %s", op, value, data)
			counts[fmt.Sprint(want)]++
			if _, isRange := value.(string); isRange && rangeRegex.MatchString(value.(string)) {
				counts["range "+fmt.Sprint(want)]++
			}
		}
	}
	t.Logf("1,500 conditions on 20 objects each: %v", counts)
	require.Greater(t, counts["range true"], 3000)
	require.Greater(t, counts["range false"], 3000)
}

// admissionValues are string values an In condition reads at admission (a
// ConfigMap's): JSON arrays of strings, which Kyverno parses (white space,
// wildcards, the empty array, an empty string among them), and text that is
// not, or that admitc does not parse (escapes, numbers, null, objects).
var admissionValues = []string{
	`["a","b"]`, ` [ "a" ,"b*" ]` + "\n", `[]`, `[""]`, `["a"]`, `["*"]`, `["a", "a"]`, "[\t\"b\"\r]",
	`a`, `b*`, `*`, ``, `["a",]`, `[a]`, `["a"`, `["a\"b"]`, `["\u0061"]`, `[1]`, `["a", null]`, `{"a": 1}`, `8000-9000`,
	// JSON that is no list of strings (invalid type), JSON's null (no
	// strings), and text that only looks like them (itself).
	`5`, ` 5 `, `-1.5e3`, `0`, `true`, "false\n", `"a"`, `"a\"b"`, `"\u0061"`, `null`, ` null`,
	`05`, `5a`, `-`, `1.`, `tru`, `nul`, `"a`, `"\x"`, `5*`,
}

// TestInOperatorsOnValuesReadAtAdmissionAsKyverno evaluates AnyIn, AllIn,
// AnyNotIn and AllNotIn conditions whose key and value both read the
// object (the value a string, as a ConfigMap's data holds) through
// Kyverno's variables.Evaluate and through admitc's CEL: the same decision
// on every pair, a JSON array of plain strings parsed as Kyverno parses
// it; the values admitc does not parse raise its error, counted.
func TestInOperatorsOnValuesReadAtAdmissionAsKyverno(t *testing.T) {
	jp := jmespath.New(config.NewDefaultConfiguration(false))
	cc := celenv.NewCompiler(celenv.RuntimeVersion())
	keys := []any{"a", "b", "c", "b*", "", `["a","b"]`, `[]`, 5, "5", "true", `"a"`, "null", []any{}, []any{"a"}, []any{"a", "b"}, []any{"a", "c"}, []any{"bx"}, []any{`["a"]`}, []any{"*"}, []any{"5"}, []any{"5", "a"}, []any{"true"}}
	counts := map[string]int{}
	for _, op := range []string{"AnyIn", "AllIn", "AnyNotIn", "AllNotIn"} {
		c := kyvernov1.Condition{Operator: kyvernov1.ConditionOperator(op)}
		c.SetKey("{{ request.object.k }}")
		c.SetValue("{{ request.object.v }}")
		fresh := 0
		expr, err := condition(c, Scope{}, &fresh, "any[0]")
		require.NoError(t, err, op)
		res := cc.CompileCELExpression(boolExpr(expr), plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
		require.Nil(t, res.Error, "%s: %s", op, expr)
		for _, v := range admissionValues {
			for _, k := range keys {
				want, out, _, gotErr := evaluateBoth(t, jp, c, res.Program, map[string]any{"k": k, "v": v})
				if gotErr != nil && strings.Contains(gotErr.Error(), NotParsedAtAdmission) {
					counts["admitc does not parse"]++
					continue
				}
				require.NoError(t, gotErr, "%s %q on key %v", op, v, k)
				require.Equal(t, want, out.Value(), "%s %q on key %v", op, v, k)
				switch isJSON, _ := regexp.MatchString(jsonStringsRegex, v); {
				case isJSON:
					counts["JSON "+fmt.Sprint(want)]++
				case json.Valid([]byte(v)):
					counts["other JSON "+fmt.Sprint(want)]++
				default:
					counts[fmt.Sprint(want)]++
				}
			}
		}
	}
	t.Logf("%d values, %d keys, 4 operators: %v", len(admissionValues), len(keys), counts)
	require.Greater(t, counts["JSON true"], 50)
	require.Greater(t, counts["JSON false"], 50)
	require.Greater(t, counts["other JSON false"], 200)
	require.Greater(t, counts["other JSON true"], 20)
}

// evaluateBoth evaluates the condition c on obj (as the request's object)
// through Kyverno's variables.Evaluate and through prg, the condition's
// CEL: Kyverno's decision, admitc's value, obj's JSON and admitc's error
// (a CEL error value included).
func evaluateBoth(t *testing.T, jp jmespath.Interface, c kyvernov1.Condition, prg cel.Program, obj map[string]any) (bool, ref.Val, []byte, error) {
	t.Helper()
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	var kyvernoObj, celObj map[string]any
	require.NoError(t, json.Unmarshal(data, &kyvernoObj))
	require.NoError(t, json.Unmarshal(data, &celObj))
	ctx := enginecontext.NewContext(jp)
	require.NoError(t, ctx.AddResource(kyvernoObj))
	want, _, wantErr := variables.Evaluate(logr.Discard(), ctx, c)
	require.NoError(t, wantErr)
	out, _, gotErr := prg.Eval(map[string]any{"object": intsAsInt64(celObj), "oldObject": nil, "request": map[string]any{"operation": "CREATE"}})
	if gotErr == nil && types.IsError(out) {
		gotErr = fmt.Errorf("%v", out)
	}
	return want, out, data, gotErr
}
