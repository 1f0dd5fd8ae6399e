package celenv

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/environment"
)

// TestProgramsAreSharedOnlyWhenTheCompilationIsTheSame: two policies with
// the same expression in the same environment share one program, and the
// result keeps each caller's accessor; the same text with other return
// types, other variables, params or mode is compiled afresh, with its own
// errors.
func TestProgramsAreSharedOnlyWhenTheCompilationIsTheSame(t *testing.T) {
	ForgetPrograms()
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	expr := "object.metadata.name == 'x'"
	a1 := &validating.ValidationCondition{Expression: expr}
	a2 := &validating.ValidationCondition{Expression: expr}
	first := NewCompiler(RuntimeVersion()).CompileCELExpression(a1, opts, environment.NewExpressions)
	second := NewCompiler(RuntimeVersion()).CompileCELExpression(a2, opts, environment.NewExpressions)
	require.Nil(t, first.Error)
	assert.Same(t, first.Program, second.Program, "one program for the same compilation")
	assert.Same(t, a2, second.ExpressionAccessor, "the caller's own accessor")

	asMessage := NewCompiler(RuntimeVersion()).CompileCELExpression(&validating.MessageExpressionCondition{MessageExpression: expr}, opts, environment.NewExpressions)
	require.NotNil(t, asMessage.Error, "a bool is not a message")
	assert.Contains(t, asMessage.Error.Detail, "must evaluate to string")

	withParams := opts
	withParams.HasParams = true
	p := NewCompiler(RuntimeVersion()).CompileCELExpression(&validating.ValidationCondition{Expression: expr}, withParams, environment.NewExpressions)
	require.Nil(t, p.Error)
	assert.NotSame(t, first.Program, p.Program, "another environment")

	c := NewCompiler(RuntimeVersion())
	c.CompileAndStoreVariable(&validating.Variable{Name: "n", Expression: "1"}, opts, environment.NewExpressions)
	withVar := c.CompileCELExpression(&validating.ValidationCondition{Expression: "variables.n == 1"}, opts, environment.NewExpressions)
	require.Nil(t, withVar.Error)
	without := NewCompiler(RuntimeVersion()).CompileCELExpression(&validating.ValidationCondition{Expression: "variables.n == 1"}, opts, environment.NewExpressions)
	require.NotNil(t, without.Error, "no variable n in a policy that declares none")
	assert.Contains(t, without.Error.Detail, "undefined field 'n'")
}
