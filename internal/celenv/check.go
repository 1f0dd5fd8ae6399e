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
// A nil kubeVersion checks against the runtime's own version. A policy of
// Kyverno's CEL dialect is checked as Kyverno compiles it: every expression
// as a stored one, whatever kubeVersion says.
func Check(p *ir.Policy, kubeVersion *version.Version) ([]ExprError, error) {
	return CheckWithin(p, kubeVersion, nil)
}

// CheckWithin is Check that asks stop, before each expression, whether to
// go on: a non-nil error from stop (given the expression's origin) ends
// the check and is returned. A nil stop never stops.
func CheckWithin(p *ir.Policy, kubeVersion *version.Version, stop func(ir.Origin) error) ([]ExprError, error) {
	if kubeVersion == nil {
		kubeVersion = RuntimeVersion()
	}
	env, mode := PolicyEnv(p), environment.NewExpressions
	env.Version = kubeVersion
	if p.CEL == ir.CELKyverno {
		env.Version, mode = RuntimeVersion(), environment.StoredExpressions
	}
	envs, err := sharedOptionEnvs(env)
	if err != nil {
		return nil, fmt.Errorf("initialise CEL compiler: %w", err)
	}
	cc := NewCompilerIn(env)
	opts := policyOptions(p)
	var errs []ExprError
	var stopped error
	// next says whether the expression at o is to be checked.
	next := func(o ir.Origin) bool {
		if stopped == nil && stop != nil {
			stopped = stop(o)
		}
		return stopped == nil
	}
	collect := func(o ir.Origin, expr string, res plugincel.CompilationResult) {
		if res.Error != nil {
			errs = append(errs, parseDetail(o, expr, res.Error.Detail)...)
		}
	}
	// Which variables a match condition sees: none in the API server
	// (its validation compiles match conditions without the policy's
	// variables, validateMatchConditionsExpression, and refuses one that
	// reads them) and in a Kyverno ValidatingPolicy (compiled before the
	// variables); all of them in a Kyverno MutatingPolicy (compiled after).
	conditions := func(withVariables bool) {
		for _, mc := range p.MatchConditions {
			if !next(mc.Origin) {
				return
			}
			a := &matchconditions.MatchCondition{Name: mc.Name, Expression: mc.Expression}
			if withVariables || p.CEL == ir.CELKyverno {
				collect(mc.Origin, mc.Expression, cc.CompileCELExpression(a, opts, mode))
			} else {
				collect(mc.Origin, mc.Expression, compileIn(envs[opts], a, mode))
			}
		}
	}
	kyvernoMutating := p.CEL == ir.CELKyverno && p.Kind == ir.Mutating
	if !kyvernoMutating {
		conditions(false)
	}
	if stopped != nil {
		return errs, stopped
	}
	for _, v := range p.Variables {
		if !next(v.Origin) {
			return errs, stopped
		}
		collect(v.Origin, v.Expression, cc.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, opts, mode))
	}
	if kyvernoMutating {
		conditions(true)
	}
	if stopped != nil {
		return errs, stopped
	}
	for _, v := range p.Validations {
		if !next(v.Origin) {
			return errs, stopped
		}
		collect(v.Origin, v.Expression, cc.CompileCELExpression(&validating.ValidationCondition{Expression: v.Expression}, opts, mode))
		if v.MessageExpression != "" {
			o := v.Origin
			if v.MessageExpressionOrigin != nil {
				o = *v.MessageExpressionOrigin
			}
			msgOpts := opts
			msgOpts.HasAuthorizer = false
			collect(o, v.MessageExpression, cc.CompileCELExpression(&validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}, msgOpts, mode))
		}
	}
	for _, a := range p.AuditAnnotations {
		if !next(a.Origin) {
			return errs, stopped
		}
		collect(a.Origin, a.ValueExpression, cc.CompileCELExpression(&validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}, opts, mode))
	}
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	for _, m := range p.Mutations {
		if !next(m.Origin) {
			return errs, stopped
		}
		if m.PatchType == ir.ApplyConfiguration {
			collect(m.Origin, m.Expression, cc.CompileCELExpression(&patch.ApplyConfigurationCondition{Expression: m.Expression}, patchOpts, mode))
			continue
		}
		collect(m.Origin, m.Expression, cc.CompileCELExpression(&patch.JSONPatchCondition{Expression: m.Expression}, patchOpts, mode))
	}
	return errs, nil
}
