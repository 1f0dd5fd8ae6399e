package celenv

import (
	"context"
	"fmt"
	"math"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/lazy"

	"github.com/admitc/admitc/ir"
)

// Compiler compiles the expressions of one policy with variable composition,
// as plugincel.CompositedCompiler does, in environments shared by every
// policy whose variables have the same names and types. It holds the
// policy's variables, so it is not shared between policies.
type Compiler struct {
	env   Env
	state *composition
	// unchecked compiles without the type checker (CompileUnchecked).
	unchecked bool
}

// composition is one policy's variables: their types and programs.
type composition struct {
	fields   variablesType
	mapType  *apiservercel.DeclType
	compiled map[string]plugincel.CompilationResult
}

// NewCompiler returns a compiler for one policy in the environment of an API
// server of version v.
func NewCompiler(v *version.Version) *Compiler { return NewCompilerIn(KubernetesEnv(v)) }

// NewCompilerIn returns a compiler for one policy in the environments of e.
func NewCompilerIn(e Env) *Compiler {
	return &Compiler{env: e, state: &composition{
		fields:   variablesType{},
		mapType:  apiservercel.NewObjectType(variablesTypeName, map[string]*apiservercel.DeclField{}),
		compiled: map[string]plugincel.CompilationResult{},
	}}
}

// CompileCELExpression compiles one expression, seeing the variables stored so far.
func (c *Compiler) CompileCELExpression(a plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations, mode environment.Type) plugincel.CompilationResult {
	env, err := sharedVariablesEnv(c.env, opts, c.state.fields)
	if err != nil {
		return compileError(a, fmt.Sprintf("unexpected error loading CEL environment: %v", err), apiservercel.ErrorTypeInternal, nil)
	}
	if c.unchecked {
		return compileUncheckedIn(env, a, mode)
	}
	return compileIn(env, a, mode)
}

// CompileAndStoreVariable compiles a variable and makes it visible to the
// expressions compiled after it.
func (c *Compiler) CompileAndStoreVariable(v plugincel.NamedExpressionAccessor, opts plugincel.OptionalVariableDeclarations, mode environment.Type) plugincel.CompilationResult {
	res := c.CompileCELExpression(v, opts, mode)
	t := declType(res.OutputType)
	fields := make(variablesType, len(c.state.fields)+1)
	for k, f := range c.state.fields {
		fields[k] = f
	}
	fields[v.GetName()] = t
	c.state.fields = fields
	c.state.mapType.Fields[v.GetName()] = apiservercel.NewDeclField(v.GetName(), t, true, nil, nil)
	c.state.compiled[v.GetName()] = res
	return res
}

// CompileCondition compiles expressions into an evaluator that resolves the
// policy's variables lazily, as plugincel.CompositedCompiler.CompileCondition.
func (c *Compiler) CompileCondition(as []plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations, mode environment.Type) plugincel.ConditionEvaluator {
	results := make([]plugincel.CompilationResult, len(as))
	for i, a := range as {
		if a != nil {
			results[i] = c.CompileCELExpression(a, opts, mode)
		}
	}
	return c.condition(results)
}

// compileAll compiles stored expressions, a zero result for a nil accessor.
func (c *Compiler) compileAll(as []plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations) []plugincel.CompilationResult {
	results := make([]plugincel.CompilationResult, len(as))
	for i, a := range as {
		if a != nil {
			results[i] = c.CompileCELExpression(a, opts, environment.StoredExpressions)
		}
	}
	return results
}

// condition is the evaluator of compiled results, with this compiler's variables.
func (c *Compiler) condition(results []plugincel.CompilationResult) plugincel.ConditionEvaluator {
	return &compositedCondition{ConditionEvaluator: plugincel.NewCondition(results), state: c.state}
}

// CompileMutatingEvaluator compiles one mutation; evaluate it in a context
// from CreateContext, as the API server's mutating dispatcher does.
func (c *Compiler) CompileMutatingEvaluator(a plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations, mode environment.Type) plugincel.MutatingEvaluator {
	if c.env.Dialect == ir.CELKyverno {
		return &contextEvaluator{result: c.CompileCELExpression(a, opts, mode)}
	}
	return plugincel.NewMutatingEvaluator(c.CompileCELExpression(a, opts, mode))
}

// CreateContext returns a context in which the policy's variables resolve.
func (c *Compiler) CreateContext(parent context.Context) plugincel.CompositionContext {
	return &compositionContext{Context: parent, state: c.state}
}

// compileIn is plugincel's compiler.CompileCELExpression (k8s.io/apiserver
// v0.36.3), remembered per environment, mode, return types and expression
// text (see programCache): a policy set repeats expressions (autogen, one
// policy shape with different names), and a compiled program is immutable.
func compileIn(envSet *environment.EnvSet, a plugincel.ExpressionAccessor, mode environment.Type) plugincel.CompilationResult {
	key := programKey{env: envSet, mode: mode, returnTypes: returnTypesKey(a.ReturnTypes()), expression: a.GetExpression()}
	return cached(key, a, func() plugincel.CompilationResult { return compileUncached(envSet, a, mode) })
}

// compileUncheckedIn is compileIn without the type checker: the
// expression parsed and planned with its functions dispatched on the
// values' runtime types, its output type dyn (remembered apart from the
// checked programs).
func compileUncheckedIn(envSet *environment.EnvSet, a plugincel.ExpressionAccessor, mode environment.Type) plugincel.CompilationResult {
	key := programKey{env: envSet, mode: mode, returnTypes: "unchecked " + returnTypesKey(a.ReturnTypes()), expression: a.GetExpression()}
	return cached(key, a, func() plugincel.CompilationResult {
		env, err := envSet.Env(mode)
		if err != nil {
			return compileError(a, fmt.Sprintf("unexpected error loading CEL environment: %v", err), apiservercel.ErrorTypeInternal, nil)
		}
		ast, issues := env.Parse(a.GetExpression())
		if issues != nil {
			return compileError(a, "compilation failed: "+issues.String(), apiservercel.ErrorTypeInvalid, apiservercel.NewCompilationError(issues))
		}
		return program(env, ast, a)
	})
}

// cached is the result remembered under key, else compile's, remembered.
func cached(key programKey, a plugincel.ExpressionAccessor, compile func() plugincel.CompilationResult) plugincel.CompilationResult {
	if res, ok := programs.get(key); ok {
		res.ExpressionAccessor = a
		return res
	}
	res := compile()
	programs.put(key, res)
	return res
}

func compileUncached(envSet *environment.EnvSet, a plugincel.ExpressionAccessor, mode environment.Type) plugincel.CompilationResult {
	env, err := envSet.Env(mode)
	if err != nil {
		return compileError(a, fmt.Sprintf("unexpected error loading CEL environment: %v", err), apiservercel.ErrorTypeInternal, nil)
	}
	ast, issues := env.Compile(a.GetExpression())
	if issues != nil {
		return compileError(a, "compilation failed: "+issues.String(), apiservercel.ErrorTypeInvalid, apiservercel.NewCompilationError(issues))
	}
	if reason := returnTypeMismatch(ast, a.ReturnTypes()); reason != "" {
		return compileError(a, reason, apiservercel.ErrorTypeInvalid, nil)
	}
	if _, err := cel.AstToCheckedExpr(ast); err != nil {
		return compileError(a, "unexpected compilation error: "+err.Error(), apiservercel.ErrorTypeInternal, nil)
	}
	return program(env, ast, a)
}

// program plans ast, its output type the AST's (dyn when unchecked).
func program(env *cel.Env, ast *cel.Ast, a plugincel.ExpressionAccessor) plugincel.CompilationResult {
	prog, err := env.Program(ast, cel.InterruptCheckFrequency(celconfig.CheckFrequency))
	if err != nil {
		return compileError(a, "program instantiation failed: "+err.Error(), apiservercel.ErrorTypeInternal, nil)
	}
	return plugincel.CompilationResult{Program: prog, ExpressionAccessor: a, OutputType: ast.OutputType()}
}

func returnTypeMismatch(ast *cel.Ast, returnTypes []*cel.Type) string {
	for _, rt := range returnTypes {
		if ast.OutputType().IsExactType(rt) || cel.AnyType.IsExactType(rt) {
			return ""
		}
	}
	if len(returnTypes) == 1 {
		return fmt.Sprintf("must evaluate to %v but got %v", returnTypes[0].String(), ast.OutputType().String())
	}
	return fmt.Sprintf("must evaluate to one of %v but got %v", returnTypes, ast.OutputType().String())
}

func compileError(a plugincel.ExpressionAccessor, detail string, t apiservercel.ErrorType, cause error) plugincel.CompilationResult {
	return plugincel.CompilationResult{Error: &apiservercel.Error{Type: t, Detail: detail, Cause: cause}, ExpressionAccessor: a}
}

// compositedCondition is plugincel.CompositedConditionEvaluator.
type compositedCondition struct {
	plugincel.ConditionEvaluator
	state *composition
}

// ForInput evaluates in a fresh composition context, as upstream does.
func (f *compositedCondition) ForInput(ctx context.Context, attr *admission.VersionedAttributes, req *admissionv1.AdmissionRequest, vars plugincel.OptionalVariableBindings, ns *corev1.Namespace, budget int64) ([]plugincel.EvaluationResult, int64, error) {
	return f.ConditionEvaluator.ForInput(&compositionContext{Context: ctx, state: f.state}, attr, req, vars, ns, budget)
}

// compositionContext is plugincel's compositionContext: variables evaluate
// lazily, at most once per context, and their cost is accumulated.
type compositionContext struct {
	context.Context
	state           *composition
	accumulatedCost int64
}

// Variables returns the lazy "variables" map for one activation.
func (c *compositionContext) Variables(activation any) ref.Val {
	m := lazy.NewMapValue(c.state.mapType)
	for name, result := range c.state.compiled {
		a := &variableAccessor{name: name, result: result, activation: activation, context: c}
		m.Append(name, a.callback)
	}
	return m
}

// GetAndResetCost returns the cost accumulated by variables and resets it.
func (c *compositionContext) GetAndResetCost() int64 {
	cost := c.accumulatedCost
	c.accumulatedCost = 0
	return cost
}

type variableAccessor struct {
	name       string
	result     plugincel.CompilationResult
	activation any
	context    *compositionContext
}

func (a *variableAccessor) callback(_ *lazy.MapValue) ref.Val {
	if a.result.Error != nil {
		return types.NewErr("composited variable %q fails to compile: %v", a.name, a.result.Error)
	}
	v, details, err := a.result.Program.ContextEval(a.context, a.activation)
	if details == nil {
		return types.NewErr("unable to get evaluation details of variable %q", a.name)
	}
	costPtr := details.ActualCost()
	if costPtr == nil {
		return types.NewErr("unable to calculate cost of variable %q", a.name)
	}
	cost := int64(*costPtr)
	if *costPtr > math.MaxInt64 {
		cost = math.MaxInt64
	}
	a.context.accumulatedCost += cost
	if err != nil {
		return types.NewErr("composited variable %q fails to evaluate: %v", a.name, err)
	}
	return v
}

var (
	_ plugincel.CompositionContext = (*compositionContext)(nil)
	_ plugincel.ConditionEvaluator = (*compositedCondition)(nil)
)
