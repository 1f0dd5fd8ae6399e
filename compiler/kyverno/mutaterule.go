package kyverno

import (
	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

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
		return &refusal{"mutate.targets", mp + ".targets", "mutating existing objects happens in Kyverno's background controller, not at admission"}
	case m.MutateExistingOnPolicyUpdate != nil && *m.MutateExistingOnPolicyUpdate:
		return &refusal{"mutateExistingOnPolicyUpdate", mp + ".mutateExistingOnPolicyUpdate", "mutating existing objects happens in Kyverno's background controller, not at admission"}
	case len(m.ForEachMutation) == 0 && m.GetPatchStrategicMerge() == nil && m.PatchesJSON6902 == "":
		return &refusal{"mutate without a patch", mp, "the mutate block has neither patchStrategicMerge nor patchesJson6902"}
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
		s, err := mutate.TranslateStrategicMerge(p)
		if err != nil {
			return r.mutateConstructRefusal(mp, err, c.autogenOf != "")
		}
		o := r.origin(mp + ".patchStrategicMerge")
		pol.Variables = append(pol.Variables, ir.NamedExpression{Name: PatchWalkVariable, Expression: s.Walk, Origin: o})
		pol.Mutations = []ir.Mutation{{PatchType: ir.JSONPatch, Expression: s.Expression("variables." + PatchWalkVariable), Origin: o}}
		return nil
	}
	e, err := mutate.JSON6902(m.PatchesJSON6902)
	if err != nil {
		return r.mutateConstructRefusal(mp, err, false)
	}
	pol.Mutations = []ir.Mutation{{PatchType: ir.JSONPatch, Expression: e, Origin: r.origin(mp + ".patchesJson6902")}}
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
	return &refusal{"mutate construct", at, why}
}
