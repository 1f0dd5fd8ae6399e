package runtime

import "github.com/admitc/admitc/ir"

// Matches reports whether p judges req: its resource (and subresource, if
// any) is among the policy's resources and its operation among the policy's
// operations. Versions are compared as matchPolicy: Equivalent does, that is
// not at all.
func Matches(p *ir.Policy, req *Request) bool {
	if !hasOperation(p.Match.Operations, req.Operation) {
		return false
	}
	for _, r := range p.Match.Resources {
		if r.Group != req.Resource.Group || r.Resource != req.Resource.Resource {
			continue
		}
		if req.SubResource == "" {
			if r.SubresourcesOnly {
				continue
			}
			return true
		}
		for _, s := range r.Subresources {
			if s == req.SubResource {
				return true
			}
		}
	}
	return false
}

func hasOperation(ops []ir.Operation, op ir.Operation) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}
