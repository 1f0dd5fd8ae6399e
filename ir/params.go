package ir

import (
	"encoding/json"
	"sort"
	"strings"
)

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

// ParamSource is one place a policy reads parameter objects from in the
// cluster: the objects of Kind called Name, or those Selector matches, in
// Namespace. An empty Namespace is the request's namespace for a
// namespaced kind, so any namespace, and none for a cluster-scoped kind.
type ParamSource struct {
	Kind      ParamKind      `json:"kind"`
	Namespace string         `json:"namespace,omitempty"`
	Name      string         `json:"name,omitempty"`
	Selector  *LabelSelector `json:"selector,omitempty"`
}

// ParamSources returns the places the set's policies read parameter
// objects from in the cluster, each once, sorted: the paramRef of every
// binding whose parameter objects are not compiled in (an imported
// policy's bindings, the one implicit binding of a policy in admitc's own
// format). A paramRef with neither a name nor a selector reads nothing.
func (s *PolicySet) ParamSources() []ParamSource {
	seen := map[string]bool{}
	var out []ParamSource
	add := func(k ParamKind, ref *ParamRef) {
		if ref == nil || (ref.Name == "" && ref.Selector == nil) {
			return
		}
		src := ParamSource{Kind: k, Namespace: ref.Namespace, Name: ref.Name}
		if ref.Name == "" {
			src.Selector = ref.Selector
		}
		key := src.key()
		if !seen[key] {
			seen[key] = true
			out = append(out, src)
		}
	}
	for i := range s.Policies {
		p := &s.Policies[i]
		k := p.ClusterParamKind()
		switch {
		case k == nil:
		case !p.Imported():
			add(*k, p.ParamRef)
		default:
			for j := range p.Bindings {
				if len(p.Bindings[j].Params) == 0 {
					add(*k, p.Bindings[j].ParamRef)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

// key orders and tells apart sources: kind, namespace, name, then selector
// (its JSON: map keys sorted).
func (s ParamSource) key() string {
	sel, _ := json.Marshal(s.Selector)
	return strings.Join([]string{s.Kind.APIVersion, s.Kind.Kind, s.Namespace, s.Name, string(sel)}, "\x00")
}
