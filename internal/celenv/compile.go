package celenv

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/ir"
)

// RuntimeVersion is the compatibility version of the environment the runtime
// evaluates with: the API server's own default.
func RuntimeVersion() *version.Version { return environment.DefaultCompatibilityVersion() }

// CompiledPolicy is a policy compiled by the upstream admission CEL code.
// Exactly one of Validator or Patchers is set, by the policy's kind.
type CompiledPolicy struct {
	// Validator evaluates match conditions, validations, messages and audit
	// annotations the way a ValidatingAdmissionPolicy does.
	Validator validating.Validator
	// Matcher evaluates a mutating policy's match conditions (nil when none).
	Matcher matchconditions.Matcher
	// Patchers are a mutating policy's JSONPatch mutations, in order.
	Patchers []patch.Patcher
	// Compiler holds the policy's variables; mutations evaluate in a
	// context from its CreateContext.
	Compiler *Compiler
}

// Compile compiles p for evaluation, exactly as the API server's validating
// and mutating policy plugins compile a policy object. Compile errors are not
// returned: as in the API server they surface as decisions at request time.
// Use Check to find them ahead of time.
func Compile(p *ir.Policy) (*CompiledPolicy, error) {
	if _, err := sharedOptionEnvs(RuntimeVersion()); err != nil {
		return nil, fmt.Errorf("initialise CEL compiler: %w", err)
	}
	cc := NewCompiler(RuntimeVersion())
	opts := plugincel.OptionalVariableDeclarations{HasParams: p.ParamKind != nil, HasAuthorizer: true}
	for _, v := range variableAccessors(p.Variables) {
		cc.CompileAndStoreVariable(v, opts, environment.StoredExpressions)
	}
	matcher := compileMatcher(cc, p, opts)
	out := &CompiledPolicy{Compiler: cc, Matcher: matcher}
	if p.Kind == ir.Mutating {
		patchOpts := opts
		patchOpts.HasPatchTypes = true
		for _, m := range p.Mutations {
			if m.PatchType == ir.ApplyConfiguration {
				ev := cc.CompileMutatingEvaluator(&patch.ApplyConfigurationCondition{Expression: m.Expression}, patchOpts, environment.StoredExpressions)
				out.Patchers = append(out.Patchers, patch.NewApplyConfigurationPatcher(ev))
				continue
			}
			ev := cc.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.Expression}, patchOpts, environment.StoredExpressions)
			out.Patchers = append(out.Patchers, patch.NewJSONPatcher(ev))
		}
		return out, nil
	}
	msgOpts := plugincel.OptionalVariableDeclarations{HasParams: p.ParamKind != nil}
	fp := FailurePolicy(p.FailurePolicy)
	out.Validator = validating.NewValidator(
		cc.CompileCondition(validationAccessors(p.Validations), opts, environment.StoredExpressions),
		matcher,
		cc.CompileCondition(auditAccessors(p.AuditAnnotations), opts, environment.StoredExpressions),
		cc.CompileCondition(messageAccessors(p.Validations), msgOpts, environment.StoredExpressions),
		fp, nil)
	return out, nil
}

// FailurePolicy converts an IR failure policy to the API type.
func FailurePolicy(f ir.FailurePolicy) *admissionregistrationv1.FailurePolicyType {
	fp := admissionregistrationv1.Fail
	if f == ir.Ignore {
		fp = admissionregistrationv1.Ignore
	}
	return &fp
}

func compileMatcher(cc *Compiler, p *ir.Policy, opts plugincel.OptionalVariableDeclarations) matchconditions.Matcher {
	if len(p.MatchConditions) == 0 {
		return nil
	}
	accessors := make([]plugincel.ExpressionAccessor, len(p.MatchConditions))
	for i, mc := range p.MatchConditions {
		accessors[i] = &matchconditions.MatchCondition{Name: mc.Name, Expression: mc.Expression}
	}
	kind := "validate"
	if p.Kind == ir.Mutating {
		kind = "mutate"
	}
	return matchconditions.NewMatcher(cc.CompileCondition(accessors, opts, environment.StoredExpressions), FailurePolicy(p.FailurePolicy), "policy", kind, p.Name)
}

func variableAccessors(vars []ir.NamedExpression) []plugincel.NamedExpressionAccessor {
	out := make([]plugincel.NamedExpressionAccessor, len(vars))
	for i, v := range vars {
		out[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	return out
}

func validationAccessors(vs []ir.Validation) []plugincel.ExpressionAccessor {
	out := make([]plugincel.ExpressionAccessor, len(vs))
	for i, v := range vs {
		out[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message}
	}
	return out
}

func messageAccessors(vs []ir.Validation) []plugincel.ExpressionAccessor {
	out := make([]plugincel.ExpressionAccessor, len(vs))
	for i, v := range vs {
		if v.MessageExpression != "" {
			out[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	return out
}

func auditAccessors(as []ir.AuditAnnotation) []plugincel.ExpressionAccessor {
	out := make([]plugincel.ExpressionAccessor, len(as))
	for i, a := range as {
		out[i] = &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	return out
}

// ExprError is a CEL compile error in one expression of a policy.
type ExprError struct {
	// Origin is where the expression is written.
	Origin ir.Origin
	// Expression is the CEL source.
	Expression string
	// Line and Column locate the error inside Expression (1-based); 0 when unknown.
	Line, Column int
	// Message is the compiler's message, without position.
	Message string
}

var celErrorLine = regexp.MustCompile(`ERROR: <input>:(\d+):(\d+): (.*)`)

// parseDetail turns the API server's compile error text into ExprErrors.
func parseDetail(origin ir.Origin, expr, detail string) []ExprError {
	var out []ExprError
	for _, m := range celErrorLine.FindAllStringSubmatch(detail, -1) {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		out = append(out, ExprError{Origin: origin, Expression: expr, Line: line, Column: col, Message: strings.TrimSuffix(strings.TrimSpace(m[3]), " (in container '')")})
	}
	if len(out) == 0 {
		msg := strings.TrimPrefix(strings.TrimSpace(detail), "compilation failed: ")
		out = append(out, ExprError{Origin: origin, Expression: expr, Message: msg})
	}
	return out
}
