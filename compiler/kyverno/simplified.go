package kyverno

import (
	"slices"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/internal/celtype"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// A translated rule that is not a pattern (deny, foreach, podSecurity, or
// a pattern the typed translation does not take) keeps the structure of
// its exact dynamic translation, simplified for the kinds it matches
// (internal/celtype): the type tests the schema decides are folded away.
// The dynamic form stays as the policy's Dynamic, for objects offline
// that the schema does not fit.

// simplifiedRule is pol with every expression simplified against the
// schema of its rule's kinds; nil when a kind has no known schema, or an
// expression does not simplify or type-check.
func (r *reader) simplifiedRule(pol *ir.Policy, c computedRule) *ir.Policy {
	if pol.Dynamic != nil || celSize(pol) > maxSimplifiedSize {
		return nil
	}
	nodes := r.ruleSchemas(c.rule)
	if len(nodes) == 0 {
		return nil
	}
	out, err := simplify(pol, kubeschema.Intersect(nodes...))
	if err != nil {
		return nil
	}
	return out
}

// maxSimplifiedSize bounds the CEL a rule may hold for the simplifier to
// take it: simplifying and type-checking twice what a nested foreach
// emits costs more than the translation itself, and what is that large
// keeps its exact form.
const maxSimplifiedSize = 20_000

// celSize is the number of characters of CEL in pol's expressions.
func celSize(pol *ir.Policy) int {
	n := 0
	for _, v := range pol.MatchConditions {
		n += len(v.Expression)
	}
	for _, v := range pol.Variables {
		n += len(v.Expression)
	}
	for _, v := range pol.Validations {
		n += len(v.Expression) + len(v.MessageExpression)
	}
	for _, a := range pol.AuditAnnotations {
		n += len(a.ValueExpression)
	}
	for _, m := range pol.Mutations {
		n += len(m.Expression)
	}
	return n
}

// simplify is pol with its expressions simplified against the schema n of
// its objects; the original is its Dynamic form.
func simplify(pol *ir.Policy, n kubeschema.Node) (*ir.Policy, error) {
	obj := celtype.FromSchema(n, "")
	old := obj
	old.Nullable = true
	env := celtype.Env{
		Vars: map[string]celtype.Type{
			"object": obj, "oldObject": old,
			"request.operation": {Kind: celtype.String},
		},
		Operations: operationsOf(pol.MatchConstraints),
	}
	s := celtype.New(env)
	out := *pol
	var err error
	expr := func(e string) string {
		if err != nil || e == "" {
			return e
		}
		var got string
		got, _, err = s.Expr(e)
		return got
	}
	out.MatchConditions = simplifyNamed(pol.MatchConditions, expr)
	out.Variables = nil
	for _, v := range pol.Variables {
		if err != nil {
			break
		}
		var t celtype.Type
		var got string
		got, t, err = s.Expr(v.Expression)
		v.Expression = got
		env.Vars["variables."+v.Name] = t
		out.Variables = append(out.Variables, v)
	}
	out.Validations = nil
	for _, v := range pol.Validations {
		v.Expression, v.MessageExpression = expr(v.Expression), expr(v.MessageExpression)
		out.Validations = append(out.Validations, v)
	}
	out.AuditAnnotations = nil
	for _, a := range pol.AuditAnnotations {
		a.ValueExpression = expr(a.ValueExpression)
		out.AuditAnnotations = append(out.AuditAnnotations, a)
	}
	out.Mutations = nil
	for _, m := range pol.Mutations {
		m.Expression = expr(m.Expression)
		out.Mutations = append(out.Mutations, m)
	}
	if err != nil {
		return nil, err
	}
	if errs, err := celenv.Check(&out, nil); err != nil || len(errs) > 0 {
		return nil, errSimplifiedDoesNotCheck
	}
	out.SchemaReads = s.Reads()
	dynamic := *pol
	out.Dynamic = &dynamic
	return &out, nil
}

type simplifyError string

func (e simplifyError) Error() string { return string(e) }

const errSimplifiedDoesNotCheck = simplifyError("the simplified expressions do not type-check")

func simplifyNamed(in []ir.NamedExpression, expr func(string) string) []ir.NamedExpression {
	var out []ir.NamedExpression
	for _, n := range in {
		n.Expression = expr(n.Expression)
		out = append(out, n)
	}
	return out
}

// operationsOf are the operations a policy's constraints match (nil:
// every one).
func operationsOf(mc *ir.MatchResources) []ir.Operation {
	if mc == nil {
		return nil
	}
	var out []ir.Operation
	for _, r := range mc.ResourceRules {
		for _, op := range r.Operations {
			if op == "*" {
				return nil
			}
			if !slices.Contains(out, op) {
				out = append(out, op)
			}
		}
	}
	return out
}
