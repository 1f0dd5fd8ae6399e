package celenv

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/ir"
)

// Check type-checks every expression of p in the environment an API server of
// kubeVersion offers to newly written policies (environment.NewExpressions),
// so a library newer than the target cluster is an error here, not there.
// A nil kubeVersion checks against the runtime's own version.
func Check(p *ir.Policy, kubeVersion *version.Version) ([]ExprError, error) {
	if kubeVersion == nil {
		kubeVersion = RuntimeVersion()
	}
	envs, err := sharedOptionEnvs(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("initialise CEL compiler: %w", err)
	}
	cc := NewCompiler(kubeVersion)
	mode := environment.NewExpressions
	opts := plugincel.OptionalVariableDeclarations{HasParams: p.ParamKind != nil, HasAuthorizer: true}
	var errs []ExprError
	collect := func(o ir.Origin, expr string, res plugincel.CompilationResult) {
		if res.Error != nil {
			errs = append(errs, parseDetail(o, expr, res.Error.Detail)...)
		}
	}
	for _, v := range p.Variables {
		collect(v.Origin, v.Expression, cc.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, opts, mode))
	}
	// kube-apiserver's validation compiles match conditions without the
	// policy's variables (validateMatchConditionsExpression), and refuses a
	// policy whose match condition uses them.
	for _, mc := range p.MatchConditions {
		collect(mc.Origin, mc.Expression, compileIn(envs[opts], &matchconditions.MatchCondition{Name: mc.Name, Expression: mc.Expression}, mode))
	}
	for _, v := range p.Validations {
		collect(v.Origin, v.Expression, cc.CompileCELExpression(&validating.ValidationCondition{Expression: v.Expression}, opts, mode))
		if v.MessageExpression != "" {
			o := v.Origin
			if v.MessageExpressionOrigin != nil {
				o = *v.MessageExpressionOrigin
			}
			msgOpts := plugincel.OptionalVariableDeclarations{HasParams: p.ParamKind != nil}
			collect(o, v.MessageExpression, cc.CompileCELExpression(&validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}, msgOpts, mode))
		}
	}
	for _, a := range p.AuditAnnotations {
		collect(a.Origin, a.ValueExpression, cc.CompileCELExpression(&validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}, opts, mode))
	}
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	for _, m := range p.Mutations {
		if m.PatchType == ir.ApplyConfiguration {
			collect(m.Origin, m.Expression, cc.CompileCELExpression(&patch.ApplyConfigurationCondition{Expression: m.Expression}, patchOpts, mode))
			continue
		}
		collect(m.Origin, m.Expression, cc.CompileCELExpression(&patch.JSONPatchCondition{Expression: m.Expression}, patchOpts, mode))
	}
	return errs, nil
}
