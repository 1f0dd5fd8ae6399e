package backends

import (
	"fmt"
	"path/filepath"

	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/ir"
)

// UnresolvedKinds refuses, for a backend that names the resources it
// registers (an admission policy's matchConstraints, a webhook's rules),
// each kind p's source names that did not resolve to the resources serving
// it (ir.Policy.UnresolvedKinds): one diagnostic at the kind's place. The
// runtime matches such a kind by a guess (every group, the kind's
// conventional plural); a policy the API server enforces must not.
func UnresolvedKinds(p *ir.Policy) diag.Diagnostics {
	var out diag.Diagnostics
	for _, k := range p.UnresolvedKinds {
		out = append(out, Errorf(k.Origin, "%s", unresolvedKind(k)))
	}
	return out
}

// UnresolvedKindsReason is UnresolvedKinds for a report of one line per
// policy: the first kind, with its place, or "".
func UnresolvedKindsReason(p *ir.Policy) string {
	if len(p.UnresolvedKinds) == 0 {
		return ""
	}
	k := p.UnresolvedKinds[0]
	return fmt.Sprintf("%s:%d:%d: %s: %s", filepath.Base(k.Origin.File), k.Origin.Line, k.Origin.Column, k.Origin.Path, unresolvedKind(k))
}

func unresolvedKind(k ir.UnresolvedKind) string {
	return fmt.Sprintf("kind %s is not a built-in kind and no CRD given defines it: an admission policy or webhook must name the resources "+
		"that serve it (API group, versions, plural), which only its CustomResourceDefinition says; pass --crd with that CRD "+
		"(its YAML file, a directory of them, or kubectl get crd NAME -o yaml), or keep the policy under Kyverno (the ClusterPolicy as it is, or --backend kyverno-cel)", k.Kind)
}
