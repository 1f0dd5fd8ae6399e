package generate

import (
	"path"
	"path/filepath"

	"github.com/admitc/admitc/ir"
)

// portable returns a copy of set whose origins name each policy file by its
// base name only. Generated files are committed and checked from anywhere
// (`compile --check` in CI, from another directory, with an absolute path):
// an origin must not depend on how a --policies path was spelled or where
// admitc ran. Diagnostics keep the path as typed, so an editor can open it.
func portable(set *ir.PolicySet) *ir.PolicySet {
	out := &ir.PolicySet{Version: set.Version, Policies: make([]ir.Policy, len(set.Policies))}
	for i, p := range set.Policies {
		p.Origin = portableOrigin(p.Origin)
		p.MatchConditions = portableNamed(p.MatchConditions)
		p.Variables = portableNamed(p.Variables)
		p.Validations = portableValidations(p.Validations)
		p.AuditAnnotations = portableAudit(p.AuditAnnotations)
		p.Mutations = portableMutations(p.Mutations)
		p.UnresolvedKinds = portableKinds(p.UnresolvedKinds)
		out.Policies[i] = p
	}
	return out
}

// portableOrigin names o's file by its base name ("builtin:examples/x.json"
// and "/abs/pol/x.json" both become "x.json").
func portableOrigin(o ir.Origin) ir.Origin {
	if o.File != "" {
		o.File = path.Base(filepath.ToSlash(o.File))
	}
	return o
}

func portableNamed(in []ir.NamedExpression) []ir.NamedExpression {
	out := append([]ir.NamedExpression(nil), in...)
	for i := range out {
		out[i].Origin = portableOrigin(out[i].Origin)
	}
	return out
}

func portableValidations(in []ir.Validation) []ir.Validation {
	out := append([]ir.Validation(nil), in...)
	for i := range out {
		out[i].Origin = portableOrigin(out[i].Origin)
		if mo := out[i].MessageExpressionOrigin; mo != nil {
			o := portableOrigin(*mo)
			out[i].MessageExpressionOrigin = &o
		}
	}
	return out
}

func portableAudit(in []ir.AuditAnnotation) []ir.AuditAnnotation {
	out := append([]ir.AuditAnnotation(nil), in...)
	for i := range out {
		out[i].Origin = portableOrigin(out[i].Origin)
	}
	return out
}

func portableMutations(in []ir.Mutation) []ir.Mutation {
	out := append([]ir.Mutation(nil), in...)
	for i := range out {
		out[i].Origin = portableOrigin(out[i].Origin)
	}
	return out
}

func portableKinds(in []ir.UnresolvedKind) []ir.UnresolvedKind {
	out := append([]ir.UnresolvedKind(nil), in...)
	for i := range out {
		out[i].Origin = portableOrigin(out[i].Origin)
	}
	return out
}
