package celenv

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/environment"
)

// TestSharedCompilerMatchesUpstream compiles the same variables and
// expressions with the shared environments and with the API server's own
// CompositedCompiler, and expects the same errors and output types,
// including a reference to a variable declared later (an error upstream).
func TestSharedCompilerMatchesUpstream(t *testing.T) {
	exprs := []string{"1", "variables.a + 1", "variables.c", "[variables.a, variables.b]"}
	names := []string{"a", "b", "c", "d"}
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	upstream, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(RuntimeVersion()))
	require.NoError(t, err)
	ours := NewCompiler(RuntimeVersion())
	for i, e := range exprs {
		v := &validating.Variable{Name: names[i], Expression: e}
		want := upstream.CompileAndStoreVariable(v, opts, environment.NewExpressions)
		got := ours.CompileAndStoreVariable(v, opts, environment.NewExpressions)
		assert.Equal(t, errText(want), errText(got), e)
		assert.Equal(t, want.OutputType.String(), got.OutputType.String(), e)
	}
	for _, e := range []string{"variables.d.size() == 2", "variables.c == 1", "variables.a == 'x'", "variables.nope"} {
		a := &validating.ValidationCondition{Expression: e}
		assert.Equal(t, errText(upstream.CompileCELExpression(a, opts, environment.NewExpressions)),
			errText(ours.CompileCELExpression(a, opts, environment.NewExpressions)), e)
	}
}

func errText(r plugincel.CompilationResult) string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Detail
}
