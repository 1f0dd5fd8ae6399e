package ir

import "sort"

// ClusterParamKind returns the kind of the parameter objects p reads from
// the cluster: its ParamKind, unless it has none or every binding carries
// its parameter objects compiled in (a Gatekeeper constraint is its own
// binding's parameter object, and is never looked up).
func (p *Policy) ClusterParamKind() *ParamKind {
	if p.ParamKind == nil {
		return nil
	}
	if !p.Imported() || len(p.Bindings) == 0 {
		return p.ParamKind
	}
	for _, b := range p.Bindings {
		if len(b.Params) == 0 {
			return p.ParamKind
		}
	}
	return nil
}

// ParamKinds returns the kinds of parameter objects the set's policies read
// from the cluster (see ClusterParamKind), each once, sorted by apiVersion
// and kind: what a webhook serving the set watches and needs permission to
// read.
func (s *PolicySet) ParamKinds() []ParamKind {
	seen := map[ParamKind]bool{}
	var out []ParamKind
	for i := range s.Policies {
		k := s.Policies[i].ClusterParamKind()
		if k == nil || seen[*k] {
			continue
		}
		seen[*k] = true
		out = append(out, *k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].APIVersion != out[j].APIVersion {
			return out[i].APIVersion < out[j].APIVersion
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}
