package kyverno

import (
	"fmt"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/compiler/kyverno/mutate"
	"github.com/admitc/admitc/ir"
)

// A mutate.foreach rule, lowered as Kyverno's mutate handler runs it
// (pkg/engine/handlers/mutation/common.go mutateForEach and
// mutateElements): one JSONPatch mutation per entry, in order, so each
// entry's list and variables read the object the entries before it
// patched (Kyverno puts it in the context as request.object). In an entry:
//
//   - the list is a JMESPath query; a key it cannot resolve is the rule's
//     error ("failed to evaluate list"), a value that is not a list is a
//     list of one, null elements are skipped;
//   - the elements are patched in reverse order for a patchStrategicMerge
//     and in order for a patchesJson6902, unless order says otherwise;
//     elementIndex is the element's place in the list;
//   - the entry's preconditions skip an element when they do not hold and
//     fail the rule when they cannot be evaluated;
//   - each element's patch is applied to the object the previous element's
//     patch returned (package mutate says which patches it translates, and
//     why their operations computed on the entry's object are exact).
//
// A patch that changes nothing is Kyverno's skip ("0 elements processed").

// Names of one foreach entry's CEL: its elements, the indexes of those
// it patches, one element and its index.
const (
	forEachElements = "kyvernoElements"
	forEachApplied  = "kyvernoApplied"
	forEachElement  = "kyvernoElement"
	forEachIndex    = "kyvernoIndex"
)

// mutateForEachRule fills pol with one mutation per foreach entry of the
// rule at path, or says why it cannot.
func (r *reader) mutateForEachRule(pol *ir.Policy, c computedRule, path string) *refusal {
	fes := c.rule.Mutation.ForEachMutation
	for k := range fes {
		ep := fmt.Sprintf("%s.mutate.foreach[%d]", path, k)
		e, f := r.forEachEntry(&fes[k], ep, c.autogenOf != "")
		if f != nil {
			return f
		}
		pol.Mutations = append(pol.Mutations, ir.Mutation{PatchType: ir.JSONPatch, Expression: e, Origin: r.origin(ep)})
	}
	return nil
}

// forEachEntry is the JSONPatch expression of one foreach entry at ep.
func (r *reader) forEachEntry(fe *kyvernov1.ForEachMutation, ep string, autogen bool) (string, *refusal) {
	switch {
	case len(fe.Context) > 0:
		return "", &refusal{contextFeature(fe.Context[0]), ep + ".context", "a foreach entry's context is loaded by Kyverno at admission for each element; an admission policy cannot load it: keep this rule under Kyverno"}
	case len(fe.GetForEachMutation()) > 0:
		return "", &refusal{"mutate.foreach nested", ep + ".foreach", "a nested foreach mutation patches the object each outer element's patch returned; not translated: keep this rule under Kyverno"}
	case fe.List == "":
		return "", &refusal{"mutate.foreach", ep + ".list", "a foreach entry needs a list: give it one"}
	case fe.GetPatchStrategicMerge() == nil && fe.PatchesJSON6902 == "":
		return "", &refusal{"mutate.foreach", ep, "the foreach entry has neither patchStrategicMerge nor patchesJson6902: give it one"}
	}
	fresh := 0
	list, err := conditions.Query(fe.List, conditions.Scope{}, &fresh)
	if err != nil {
		return "", &refusal{"mutate.foreach list", ep + ".list", err.Error()}
	}
	e := mutate.Elements{List: forEachElements, Applied: forEachApplied, Element: forEachElement, Index: forEachIndex}
	idx := "double(" + forEachIndex + ")"
	e.Scope = conditions.Scope{Element: forEachElement, ElementIndex: idx, Loops: []conditions.Loop{{Element: forEachElement, Index: idx}}}
	applies := forEachElement + " != null"
	if fe.AnyAllConditions != nil {
		pre, err := conditions.Outcome(*fe.AnyAllConditions, e.Scope, &fresh)
		if err != nil {
			return "", r.conditionRefusal("mutate.foreach preconditions", ep+".preconditions", err)
		}
		applies += " && " + bindCEL("pre", pre, "pre == 'error' ? dyn({}['failed to evaluate mutate.foreach preconditions']) : pre == 'true'")
	}
	var patch string
	if p := fe.GetPatchStrategicMerge(); p != nil {
		patch, err = mutate.ForEachStrategicMerge(p, e)
	} else {
		patch, err = mutate.ForEachJSON6902(fe.PatchesJSON6902, e)
	}
	if err != nil {
		return "", r.mutateConstructRefusal(ep, err, autogen)
	}
	reverse := fe.GetPatchStrategicMerge() != nil
	if fe.Order != nil {
		reverse = *fe.Order == kyvernov1.Descending
	}
	order := "lists.range(size(" + forEachElements + "))"
	if reverse {
		order += ".map(q, size(" + forEachElements + ") - 1 - q)"
	}
	applied := order + ".filter(" + forEachIndex + ", " + bindCEL(forEachElement, forEachElements+"["+forEachIndex+"]", applies) + ")"
	return bindCEL(forEachElements, "dyn("+list+")",
		bindCEL(forEachElements, "type("+forEachElements+") == list ? "+forEachElements+" : ["+forEachElements+"]",
			bindCEL(forEachApplied, applied, patch))), nil
}
