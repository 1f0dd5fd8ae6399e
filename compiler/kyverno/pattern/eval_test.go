package pattern

import (
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/stretchr/testify/require"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/celenv"
)

// stringExpr is a CEL expression that must evaluate to a string.
type stringExpr string

func (s stringExpr) GetExpression() string    { return string(s) }
func (s stringExpr) ReturnTypes() []*cel.Type { return []*cel.Type{cel.StringType} }

// compileString compiles expr in admitc's CEL environment (the API
// server's, for newly written expressions), with its cost limit, and
// returns an evaluator binding object.
func compileString(t testing.TB, expr string) func(object any) (string, error) {
	t.Helper()
	cc := celenv.NewCompiler(celenv.RuntimeVersion())
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	res := cc.CompileCELExpression(stringExpr(expr), opts, environment.NewExpressions)
	require.Nil(t, res.Error, "compile %s", expr)
	return func(object any) (string, error) {
		out, _, err := res.Program.Eval(map[string]any{"object": object})
		if err != nil {
			return "", err
		}
		return out.Value().(string), nil
	}
}

// evalCost evaluates expr with object bound and returns its runtime cost.
func evalCost(t testing.TB, expr string, object any) uint64 {
	t.Helper()
	cc := celenv.NewCompiler(celenv.RuntimeVersion())
	res := cc.CompileCELExpression(stringExpr(expr), plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
	require.Nil(t, res.Error)
	_, det, err := res.Program.Eval(map[string]any{"object": object})
	require.NoError(t, err)
	require.NotNil(t, det.ActualCost())
	return *det.ActualCost()
}

// evalString compiles expr and evaluates it with object bound.
func evalString(t testing.TB, expr string, object any) (string, error) {
	t.Helper()
	return compileString(t, expr)(object)
}

// decode reads YAML or JSON as sigs.k8s.io/yaml does, with integers as
// int64 like an unstructured object.
func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal([]byte(s), &v))
	return intsAsInt64(v)
}

// intsAsInt64 turns integral float64 values into int64, as the API server's
// unstructured decoding does.
func intsAsInt64(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = intsAsInt64(e)
		}
	case []any:
		for i, e := range t {
			t[i] = intsAsInt64(e)
		}
	case float64:
		if t == float64(int64(t)) && t < 1e18 && t > -1e18 {
			return int64(t)
		}
	}
	return v
}
