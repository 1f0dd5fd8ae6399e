package kyverno

import (
	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/ir"
)

// Translated says whether admitc wrote p's CEL from a ClusterPolicy rule's
// pattern, deny, foreach or mutate block (rather than taking a rule's own
// validate.cel): its variables are admitc's.
func Translated(p *ir.Policy) bool {
	if p.Dynamic != nil {
		return Translated(p.Dynamic)
	}
	for _, v := range p.Variables {
		switch v.Name {
		case PatternVariable, OutcomeVariable, PodSecurityVariable, DenyVariable, PatchWalkVariable, ForEachVariable, conditions.ImagesVariable:
			return true
		}
	}
	return p.From != nil && p.From.Rule != "" && p.Kind == ir.Mutating
}
