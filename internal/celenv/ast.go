package celenv

import (
	"sync"

	"github.com/google/cel-go/cel"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/ir"
)

// Field says which field of a policy an expression is.
type Field string

// The fields of a policy that hold CEL.
const (
	FieldVariable          Field = "variable"
	FieldMatchCondition    Field = "matchCondition"
	FieldValidation        Field = "validation"
	FieldMessageExpression Field = "messageExpression"
	FieldAuditAnnotation   Field = "auditAnnotation"
	FieldMutation          Field = "mutation"
)

// CheckedExpr is one expression of a policy, type-checked in the policy's
// own environment (PolicyEnv) with the variables declared before it.
type CheckedExpr struct {
	Field Field
	// Index is the expression's index among the policy's expressions of
	// its field.
	Index  int
	Origin ir.Origin
	Text   string
	// AST is the checked AST; nil when Err is set.
	AST *cel.Ast
	Err error
}

// CheckedExprs type-checks every expression of p in the order its engine
// compiles them and returns them with their checked ASTs, for passes that
// read or rewrite a policy's CEL (which libraries it calls, what it means
// in another dialect).
func CheckedExprs(p *ir.Policy) []CheckedExpr {
	cc := NewCompilerIn(PolicyEnv(p))
	opts := policyOptions(p)
	var out []CheckedExpr
	add := func(f Field, i int, o ir.Origin, text string, patch bool) {
		eo := opts
		eo.HasPatchTypes = patch
		if f == FieldMessageExpression {
			eo.HasAuthorizer = false
		}
		e := CheckedExpr{Field: f, Index: i, Origin: o, Text: text}
		e.AST, e.Err = cc.checked(text, eo)
		out = append(out, e)
	}
	conditions := func() {
		for i, mc := range p.MatchConditions {
			add(FieldMatchCondition, i, mc.Origin, mc.Expression, false)
		}
	}
	kyvernoValidating := p.CEL == ir.CELKyverno && p.Kind == ir.Validating
	if kyvernoValidating {
		conditions()
	}
	for i, v := range p.Variables {
		add(FieldVariable, i, v.Origin, v.Expression, false)
		cc.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, opts, environment.StoredExpressions)
	}
	if !kyvernoValidating {
		conditions()
	}
	for i, v := range p.Validations {
		add(FieldValidation, i, v.Origin, v.Expression, false)
		if v.MessageExpression != "" {
			o := v.Origin
			if v.MessageExpressionOrigin != nil {
				o = *v.MessageExpressionOrigin
			}
			add(FieldMessageExpression, i, o, v.MessageExpression, false)
		}
	}
	for i, a := range p.AuditAnnotations {
		add(FieldAuditAnnotation, i, a.Origin, a.ValueExpression, false)
	}
	for i, m := range p.Mutations {
		add(FieldMutation, i, m.Origin, m.Expression, true)
	}
	return out
}

// checked parses and type-checks text in this compiler's environment, as
// a stored expression, seeing the variables stored so far.
func (c *Compiler) checked(text string, opts plugincel.OptionalVariableDeclarations) (*cel.Ast, error) {
	envSet, err := sharedVariablesEnv(c.env, opts, c.state.fields)
	if err != nil {
		return nil, err
	}
	env, err := trackingEnv(envSet)
	if err != nil {
		return nil, err
	}
	ast, issues := env.Compile(text)
	if issues != nil && issues.Err() != nil {
		return nil, issues.Err()
	}
	return ast, nil
}

// trackingEnvs are the stored-expression environments of environment sets,
// extended to record macro calls in the source info, which an unparser
// needs to print a checked AST as its source was written.
var trackingEnvs sync.Map // *environment.EnvSet -> *cel.Env

func trackingEnv(envSet *environment.EnvSet) (*cel.Env, error) {
	if e, ok := trackingEnvs.Load(envSet); ok {
		return e.(*cel.Env), nil
	}
	env, err := envSet.Env(environment.StoredExpressions)
	if err != nil {
		return nil, err
	}
	env, err = env.Extend(cel.EnableMacroCallTracking())
	if err != nil {
		return nil, err
	}
	trackingEnvs.Store(envSet, env)
	return env, nil
}
