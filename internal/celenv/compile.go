package celenv

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"
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
	// Programs are the same compiled expressions, for an evaluator that
	// runs them itself (the runtime's fast path).
	Programs *Programs
}

// Programs are the compiled expressions of one policy, each as the API
// server's compiler returned it (a compile error is kept in its result).
// Slices are in the policy's order; a Messages entry is a zero result when
// its validation has no messageExpression.
type Programs struct {
	// Variables are the policy's variables; VariablesType is the CEL type
	// of the "variables" object they make up, as lazy.NewMapValue types it.
	Variables     []Variable
	VariablesType *types.Type
	// MatchConditions' accessors are *matchconditions.MatchCondition.
	MatchConditions []plugincel.CompilationResult
	// Validations' accessors are *validating.ValidationCondition.
	Validations []plugincel.CompilationResult
	// Messages' accessors are *validating.MessageExpressionCondition.
	Messages []plugincel.CompilationResult
	// AuditAnnotations' accessors are *validating.AuditAnnotationCondition.
	AuditAnnotations []plugincel.CompilationResult
}

// Variable is one compiled variable of a policy.
type Variable struct {
	Name   string
	Result plugincel.CompilationResult
	// Key is equal for two variables of any policies that evaluate to the
	// same value on the same input: the same expression, compiled with the
	// same declarations and, when it reads other variables, beside the same
	// variables.
	Key string
}

// Compile compiles p for evaluation, exactly as the API server's validating
// and mutating policy plugins compile a policy object. Compile errors are not
// returned: as in the API server they surface as decisions at request time.
// Use Check to find them ahead of time.
func Compile(p *ir.Policy) (*CompiledPolicy, error) {
	return compile(p, false)
}

// CompileUnchecked is Compile without the type checker, for the exact
// (dynamic) forms admitc writes and only its runtime evaluates: they read
// every value as dyn and test its type themselves, so the checker, whose
// work grows with the square of an expression's generic calls, would only
// confirm what they test. Functions dispatch on the runtime types, as they
// do on dyn values in a checked program.
func CompileUnchecked(p *ir.Policy) (*CompiledPolicy, error) {
	return compile(p, true)
}

func compile(p *ir.Policy, unchecked bool) (*CompiledPolicy, error) {
	env := PolicyEnv(p)
	if _, err := sharedOptionEnvs(env); err != nil {
		return nil, fmt.Errorf("initialise CEL compiler: %w", err)
	}
	cc := NewCompilerIn(env)
	cc.unchecked = unchecked
	opts := policyOptions(p)
	progs := &Programs{VariablesType: types.NewTypeValue(cc.state.mapType.TypeName(), traits.IndexerType|traits.FieldTesterType|traits.IterableType)}
	var matcher matchconditions.Matcher
	if p.CEL == ir.CELKyverno && p.Kind == ir.Validating {
		// Kyverno compiles a ValidatingPolicy's matchConditions before its
		// variables, so they cannot read them.
		matcher = compileMatcher(cc, p, opts, progs)
	}
	keys := variableKeys(p.Variables, opts)
	for i := range keys {
		// The same text means different things in two dialects.
		keys[i] = env.key() + " " + keys[i]
	}
	for i, v := range variableAccessors(p.Variables) {
		res := cc.CompileAndStoreVariable(v, opts, environment.StoredExpressions)
		progs.Variables = append(progs.Variables, Variable{Name: v.GetName(), Result: res, Key: keys[i]})
	}
	if progs.MatchConditions == nil {
		matcher = compileMatcher(cc, p, opts, progs)
	}
	out := &CompiledPolicy{Compiler: cc, Matcher: matcher, Programs: progs}
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
	msgOpts := opts
	msgOpts.HasAuthorizer = false
	progs.Validations = cc.compileAll(validationAccessors(p.Validations), opts)
	progs.AuditAnnotations = cc.compileAll(auditAccessors(p.AuditAnnotations), opts)
	progs.Messages = cc.compileAll(messageAccessors(p.Validations), msgOpts)
	out.Validator = validating.NewValidator(
		cc.condition(progs.Validations), matcher, cc.condition(progs.AuditAnnotations), cc.condition(progs.Messages),
		FailurePolicy(p.FailurePolicy), nil)
	return out, nil
}

// policyOptions are the optional declarations of p's expressions: params
// when it has a paramKind, and the authorizer, which the API server and
// Kyverno's validate.cel rules declare and Kyverno's CEL policies do not.
func policyOptions(p *ir.Policy) plugincel.OptionalVariableDeclarations {
	return plugincel.OptionalVariableDeclarations{HasParams: p.ParamKind != nil, HasAuthorizer: p.CEL != ir.CELKyverno}
}

// variableKeys returns each variable's sharing key (see Variable.Key): its
// name (an evaluation error names the variable), its expression, whether
// params are declared and, when it reads other variables, the definitions
// of every variable it reads, directly or through another.
func variableKeys(vars []ir.NamedExpression, opts plugincel.OptionalVariableDeclarations) []string {
	defs := make(map[string]string, len(vars))
	for _, v := range vars {
		defs[v.Name] = v.Expression
	}
	keys := make([]string, len(vars))
	for i, v := range vars {
		keys[i] = fmt.Sprintf("%q params=%t %q", v.Name, opts.HasParams, v.Expression)
		if read := readVariables(v.Expression, vars[:i], defs); len(read) > 0 {
			keys[i] += " beside " + strings.Join(read, ";")
		}
	}
	return keys
}

var variableRef = regexp.MustCompile(`\bvariables\b(\.[A-Za-z_][A-Za-z0-9_]*)?`)

// readVariables returns the definitions of the variables expr reads,
// transitively, as name=expression; all of before when a reference is not
// a plain "variables.name" (an index, an iteration over variables).
func readVariables(expr string, before []ir.NamedExpression, defs map[string]string) []string {
	all := func() []string {
		out := make([]string, len(before))
		for i, v := range before {
			out[i] = fmt.Sprintf("%q=%q", v.Name, v.Expression)
		}
		return out
	}
	seen := map[string]bool{}
	queue := []string{expr}
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		for _, m := range variableRef.FindAllStringSubmatch(e, -1) {
			if m[1] == "" {
				return all()
			}
			name := m[1][1:]
			if !seen[name] {
				seen[name] = true
				queue = append(queue, defs[name])
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q=%q", n, defs[n])
	}
	return out
}

// FailurePolicy converts an IR failure policy to the API type.
func FailurePolicy(f ir.FailurePolicy) *admissionregistrationv1.FailurePolicyType {
	fp := admissionregistrationv1.Fail
	if f == ir.Ignore {
		fp = admissionregistrationv1.Ignore
	}
	return &fp
}

func compileMatcher(cc *Compiler, p *ir.Policy, opts plugincel.OptionalVariableDeclarations, progs *Programs) matchconditions.Matcher {
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
	progs.MatchConditions = cc.compileAll(accessors, opts)
	return matchconditions.NewMatcher(cc.condition(progs.MatchConditions), FailurePolicy(p.FailurePolicy), "policy", kind, p.Name)
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

// VariableIndex returns the index of the variable called name, or -1.
func (p *Programs) VariableIndex(name string) int {
	for i := range p.Variables {
		if p.Variables[i].Name == name {
			return i
		}
	}
	return -1
}

// PolicyOptions are the optional declarations of p's expressions (see
// policyOptions), for callers that compile one of them.
func PolicyOptions(p *ir.Policy) plugincel.OptionalVariableDeclarations { return policyOptions(p) }
