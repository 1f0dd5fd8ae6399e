package podsecurity

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/stretchr/testify/require"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/internal/celenv"
)

type stringExpr string

func (s stringExpr) GetExpression() string    { return string(s) }
func (s stringExpr) ReturnTypes() []*cel.Type { return []*cel.Type{cel.StringType} }

// program compiles vars as a policy's variables and expr (a CEL string)
// in admitc's CEL environment, and returns an evaluator over object.
func program(t testing.TB, vars []Variable, expr string) func(object any) (string, error) {
	t.Helper()
	cc := celenv.NewCompiler(celenv.RuntimeVersion())
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	for _, v := range vars {
		res := cc.CompileAndStoreVariable(namedExpr{v.Name, v.Expression}, opts, environment.NewExpressions)
		require.Nil(t, res.Error, "variable %s: %.3000s", v.Name, v.Expression)
	}
	res := cc.CompileCELExpression(stringExpr(expr), opts, environment.NewExpressions)
	require.Nil(t, res.Error, "compile %.2000s", expr)
	return func(object any) (string, error) {
		ctx := cc.CreateContext(context.Background())
		act := map[string]any{"object": object}
		act["variables"] = ctx.Variables(act)
		out, _, err := res.Program.ContextEval(ctx, act)
		if err != nil {
			return "", err
		}
		if s, ok := out.Value().(string); ok {
			return s, nil
		}
		return "", fmt.Errorf("%v", out)
	}
}

type namedExpr struct{ name, expr string }

func (n namedExpr) GetName() string          { return n.name }
func (n namedExpr) GetExpression() string    { return n.expr }
func (n namedExpr) ReturnTypes() []*cel.Type { return []*cel.Type{cel.AnyType, cel.DynType} }

// withoutNullTests drops orEmpty's null test, nested ones too, and leaves
// every other list of one alone.
func TestWithoutNullTests(t *testing.T) {
	in := "[[o.?a.orValue({})].map(x, x == null ? {} : x)[0].?b.orValue([])].map(x, x == null ? [] : x)[0].size() + [m[k]].map(x, x == null ? '' : x)[0].size() + [c.?n.orValue('')].map(x, x == null ? '' : x)[0].size()"
	require.Equal(t, "o.?a.orValue({}).?b.orValue([]).size() + [m[k]].map(x, x == null ? '' : x)[0].size() + c.?n.orValue('').size()", withoutNullTests(in))
}
