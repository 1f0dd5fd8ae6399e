package ir

import (
	"fmt"
	"sort"
)

// What an imported ValidatingAdmissionPolicy or MutatingAdmissionPolicy and
// its bindings say about scope. A policy with MatchConstraints is matched as
// the API server matches it: by its constraints, then by each binding, each
// binding with its own actions and parameters. A policy with
// MatchConstraints and no binding does nothing, as in the API server. A
// policy without MatchConstraints (admitc's own format) is matched by Match
// and has one implicit binding: its Actions and ParamRef, with the
// namespaces the backends are given.

// MatchPolicy is how rules match equivalent resources in other versions.
type MatchPolicy string

const (
	// Equivalent also matches a request for the same resource in another version.
	Equivalent MatchPolicy = "Equivalent"
	// Exact matches only the versions a rule names.
	Exact MatchPolicy = "Exact"
)

// MatchResources is a policy's matchConstraints or a binding's matchResources.
type MatchResources struct {
	NamespaceSelector    *LabelSelector `json:"namespaceSelector,omitempty"`
	ObjectSelector       *LabelSelector `json:"objectSelector,omitempty"`
	ResourceRules        []ResourceRule `json:"resourceRules,omitempty"`
	ExcludeResourceRules []ResourceRule `json:"excludeResourceRules,omitempty"`
	MatchPolicy          MatchPolicy    `json:"matchPolicy,omitempty"`
}

// ResourceRule is a NamedRuleWithOperations: resources ("pods",
// "pods/ephemeralcontainers", "*", "*/scale") of API groups and versions, on
// operations ("*" for all), in a scope ("Cluster", "Namespaced" or "*"),
// optionally only the named objects.
type ResourceRule struct {
	APIGroups     []string    `json:"apiGroups,omitempty"`
	APIVersions   []string    `json:"apiVersions,omitempty"`
	Resources     []string    `json:"resources,omitempty"`
	Operations    []Operation `json:"operations,omitempty"`
	Scope         string      `json:"scope,omitempty"`
	ResourceNames []string    `json:"resourceNames,omitempty"`
}

// UnresolvedKind is a kind a policy's source names that does not resolve
// to the resources serving it, at its place in the source.
type UnresolvedKind struct {
	Kind   string `json:"kind"`
	Origin Origin `json:"origin"`
}

// LabelSelector is a Kubernetes label selector.
type LabelSelector struct {
	MatchLabels      map[string]string          `json:"matchLabels,omitempty"`
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one matchExpressions entry.
type LabelSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Binding is a ValidatingAdmissionPolicyBinding or
// MutatingAdmissionPolicyBinding of a policy.
type Binding struct {
	Name   string `json:"name"`
	Origin Origin `json:"origin"`
	// Actions are the validationActions (empty for mutating policies).
	Actions        []Action        `json:"actions,omitempty"`
	MatchResources *MatchResources `json:"matchResources,omitempty"`
	ParamRef       *ParamRef       `json:"paramRef,omitempty"`
	// Params are parameter objects compiled in with the binding: when set,
	// its ParamRef selects among them instead of the request's parameter
	// objects. A Gatekeeper Constraint is both a binding and that binding's
	// parameter object, so it travels with the binding it defines.
	Params []map[string]any `json:"params,omitempty"`
}

// Imported reports whether the policy carries its own scope
// (MatchConstraints and Bindings) rather than admitc's Match.
func (p *Policy) Imported() bool { return p.MatchConstraints != nil }

// AndSelectors is one selector that matches what both a and b match: every
// requirement of both, matchLabels written as In requirements (in key
// order), requirements that repeat one already there left out. A nil
// selector matches everything.
func AndSelectors(a, b *LabelSelector) *LabelSelector {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	out := &LabelSelector{}
	seen := map[string]bool{}
	for _, s := range []*LabelSelector{a, b} {
		keys := make([]string, 0, len(s.MatchLabels))
		for k := range s.MatchLabels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		reqs := make([]LabelSelectorRequirement, 0, len(keys)+len(s.MatchExpressions))
		for _, k := range keys {
			reqs = append(reqs, LabelSelectorRequirement{Key: k, Operator: "In", Values: []string{s.MatchLabels[k]}})
		}
		for _, r := range append(reqs, s.MatchExpressions...) {
			key := fmt.Sprint(r)
			if !seen[key] {
				seen[key] = true
				out.MatchExpressions = append(out.MatchExpressions, r)
			}
		}
	}
	return out
}
