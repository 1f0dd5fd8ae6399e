package kyverno

import (
	"encoding/json"
	"fmt"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/compiler/kyverno/mutate"
	"github.com/admitc/admitc/ir"
)

// A mutate rule, lowered as Kyverno's mutate handler runs it
// (pkg/engine/mutate/mutation.go): one mutating policy whose JSONPatch
// mutation changes the object as the rule's patchStrategicMerge or
// patchesJson6902 does (package mutate). JMESPath preconditions are a
// match condition (false: Kyverno skips the rule). A patch that changes
// nothing is Kyverno's skip ("no patches applied").

// PatchWalkVariable names the variable holding how Kyverno's preprocessing
// of a patchStrategicMerge ends on the object: the empty string (the patch applies),
// 'C' or 'G' (a conditional or global anchor is not met: no change), 'E'
// (the rule fails).
const PatchWalkVariable = "kyvernoPatchWalk"

// mutateRefusal names what a mutate rule needs that admitc cannot do.
func mutateRefusal(m *kyvernov1.Mutation, path string) *refusal {
	mp := path + ".mutate"
	switch {
	case len(m.Targets) > 0:
		return &refusal{"mutate.targets", mp + ".targets", "mutating existing objects happens in Kyverno's background controller, not at admission: keep this rule under Kyverno"}
	case m.MutateExistingOnPolicyUpdate != nil && *m.MutateExistingOnPolicyUpdate:
		return &refusal{"mutateExistingOnPolicyUpdate", mp + ".mutateExistingOnPolicyUpdate", "mutating existing objects happens in Kyverno's background controller, not at admission: keep this rule under Kyverno"}
	case len(m.ForEachMutation) == 0 && m.GetPatchStrategicMerge() == nil && m.PatchesJSON6902 == "":
		return &refusal{"mutate without a patch", mp, "the mutate block has neither patchStrategicMerge nor patchesJson6902: give it one"}
	}
	return nil
}

// mutateRule fills pol with the variables and mutation of the mutate rule
// at path, or says why it cannot.
func (r *reader) mutateRule(pol *ir.Policy, c computedRule, path string) *refusal {
	m := c.rule.Mutation
	mp := path + ".mutate"
	pol.Kind = ir.Mutating
	pol.ReinvocationPolicy = ir.ReinvokeNever
	if len(m.ForEachMutation) > 0 {
		return r.mutateForEachRule(pol, c, path)
	}
	if p := m.GetPatchStrategicMerge(); p != nil {
		s, err := mutate.TranslateStrategicMergeIn(p, r.scope(conditions.Scope{}))
		if err != nil {
			return r.mutateConstructRefusal(mp, err, c.autogenOf != "")
		}
		o := r.origin(mp + ".patchStrategicMerge")
		forced, f := r.contextSubstitution(c, path)
		if f != nil {
			return f
		}
		pol.Variables = append(pol.Variables, ir.NamedExpression{Name: PatchWalkVariable, Expression: s.Walk, Origin: o})
		pol.Mutations = []ir.Mutation{{PatchType: ir.JSONPatch, Expression: forced(s.Expression("variables." + PatchWalkVariable)), Origin: o}}
		return nil
	}
	e, err := mutate.JSON6902(m.PatchesJSON6902)
	if err != nil {
		return r.mutateConstructRefusal(mp, err, false)
	}
	forced, f := r.contextSubstitution(c, path)
	if f != nil {
		return f
	}
	pol.Mutations = []ir.Mutation{{PatchType: ir.JSONPatch, Expression: forced(e), Origin: r.origin(mp + ".patchesJson6902")}}
	return nil
}

// mutateConstructRefusal places a translation refusal at the overlay
// construct it names (or the nearest field of the file that holds it);
// an autogen rule's construct is placed in the rule it was made from.
func (r *reader) mutateConstructRefusal(mp string, err error, autogen bool) *refusal {
	at, why := mp, err.Error()
	if me, ok := err.(*mutate.Error); ok {
		at, why = r.constructAt(mp, me.Path, autogen), me.Reason
	}
	return &refusal{"mutate construct", at, withFix(why, "rewrite the patch without it, or keep this rule under Kyverno")}
}

// contextSubstitution is what Kyverno's mutate handler does before it
// patches: it substitutes the {{ }} variables of the whole rule
// (SubstituteAllInRule), its context entries' values and defaults
// included, so one of them that does not resolve fails the rule even when
// no patch reads the entry, and the messages of its preconditions (the
// preconditions held; their keys and values resolved). forced wraps a mutation expression so that
// those substitutions are evaluated first (an error is the rule's error).
func (r *reader) contextSubstitution(c computedRule, path string) (forced func(string) string, f *refusal) {
	var names, values []string
	fresh := 0
	for i, v := range r.vars {
		for _, x := range []struct {
			set   bool
			value any
			field string
		}{{v.HasValue, v.Value, "value"}, {v.HasDefault, v.Default, "default"}} {
			if !x.set {
				continue
			}
			if data, _ := json.Marshal(x.value); !strings.Contains(string(data), "{{") {
				continue
			}
			c, err := conditions.Value(x.value, r.scope(conditions.Scope{}), &fresh)
			if err != nil {
				return nil, &refusal{"context.variable", fmt.Sprintf("%s.context[%d].variable.%s", path, i, x.field), err.Error()}
			}
			names, values = append(names, fmt.Sprintf("ctxsub%d", len(names))), append(values, c)
		}
	}
	if raw := c.rule.GetAnyAllConditions(); raw != nil {
		conds, err := conditions.Decode(raw)
		if err != nil {
			return nil, r.conditionRefusal("preconditions", path+".preconditions", err)
		}
		for _, b := range []struct {
			name string
			list []kyvernov1.Condition
		}{{"any", conds.AnyConditions}, {"all", conds.AllConditions}} {
			for i, cond := range b.list {
				e, err := conditions.StringField(cond.Message, r.scope(conditions.Scope{}), &fresh)
				if err != nil {
					at := fmt.Sprintf("%s.preconditions.%s[%d].message", path, b.name, i)
					if conditions.IsList(raw) {
						at = fmt.Sprintf("%s.preconditions[%d].message", path, i)
					}
					return nil, &refusal{"condition message", at, err.Error()}
				}
				if e != "true" {
					names, values = append(names, fmt.Sprintf("ctxsub%d", len(names))), append(values, e)
				}
			}
		}
	}
	return func(e string) string {
		for i := len(names) - 1; i >= 0; i-- {
			e = "[dyn(" + values[i] + ")].map(" + names[i] + ", " + e + ")[0]"
		}
		return e
	}, nil
}
