package audit

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/admitc/admitc/ir"
)

// Target is one resource the audit lists, in the version it is listed in.
type Target struct {
	Resource   schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// String names the resource as kubectl does: pods, deployments.apps.
func (t Target) String() string { return t.Resource.GroupResource().String() }

// pattern is one resource rule of a policy: groups, versions and
// resources, each possibly "*", in a scope.
type pattern struct {
	groups, versions, resources []string
	// scope is "Cluster", "Namespaced", or "*" (either).
	scope  string
	policy *Policy
}

// served is one listable resource the API server serves.
type served struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	preferred  bool
}

// ErrNotServed is the error of a policy that names a resource the API
// server does not serve (a CRD not installed, a misspelt resource).
var ErrNotServed = errors.New("not served")

// Plan returns the resources the audited policies select, sorted by group
// and resource, resolved through disc: each in its group's preferred
// version when the policies accept it, else in the first version they name.
// A resource named without a wildcard that the API server does not serve
// is an error (ErrNotServed), as is a failed discovery of a group the
// policies name.
func (a *Auditor) Plan(disc discovery.ServerResourcesInterface) ([]Target, error) {
	all, err := servedResources(disc, a.patterns())
	if err != nil {
		return nil, err
	}
	chosen := map[schema.GroupResource]Target{}
	for _, p := range a.patterns() {
		found := false
		for _, s := range all {
			if !p.matches(s) {
				continue
			}
			found = true
			gr := s.gvr.GroupResource()
			if t, ok := chosen[gr]; ok && (t.Resource.Version == s.gvr.Version || !s.preferred) {
				continue
			}
			chosen[gr] = Target{Resource: s.gvr, Kind: s.kind, Namespaced: s.namespaced}
		}
		if !found && !p.wildcardResource() {
			return nil, fmt.Errorf("%w: policy %q matches %s, which the API server does not serve", ErrNotServed, p.policy.Title(), p.describe())
		}
	}
	out := make([]Target, 0, len(chosen))
	for _, t := range chosen {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Resource, out[j].Resource
		return a.Group < b.Group || a.Group == b.Group && a.Resource < b.Resource
	})
	return out, nil
}

// patterns are the resource rules of the audited policies on whole
// resources, for the operation each policy is judged with.
func (a *Auditor) patterns() []pattern {
	var out []pattern
	for _, pol := range a.policies {
		if pol.NotAudited != "" {
			continue
		}
		p := pol.IR
		if !p.Imported() {
			for _, r := range p.Match.Resources {
				if !r.SubresourcesOnly {
					out = append(out, pattern{groups: []string{r.Group}, versions: []string{r.Version}, resources: []string{r.Resource}, scope: "*", policy: pol})
				}
			}
			continue
		}
		for _, r := range p.MatchConstraints.ResourceRules {
			if !hasOperation(r.Operations, pol.Operation) {
				continue
			}
			var resources []string
			for _, name := range r.Resources {
				if isWholeResource(name) {
					res, _, _ := strings.Cut(name, "/")
					resources = append(resources, res)
				}
			}
			if len(resources) > 0 {
				out = append(out, pattern{groups: r.APIGroups, versions: r.APIVersions, resources: resources, scope: scopeOf(r.Scope), policy: pol})
			}
		}
	}
	return out
}

func hasOperation(ops []ir.Operation, op ir.Operation) bool {
	return slices.Contains(ops, op) || slices.Contains(ops, "*")
}

func scopeOf(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

// matches reports whether s is a resource of the pattern.
func (p pattern) matches(s served) bool {
	switch {
	case !names(p.groups, s.gvr.Group), !names(p.versions, s.gvr.Version) && !p.acceptsOtherVersion(s),
		!names(p.resources, s.gvr.Resource):
		return false
	case p.scope == "Cluster" && s.namespaced, p.scope == "Namespaced" && !s.namespaced:
		return false
	}
	return true
}

// acceptsOtherVersion: a policy in admitc's own format matches a resource
// in every version (the runtime compares group and resource only, as
// matchPolicy Equivalent does), so any version is accepted, the preferred
// one chosen.
func (p pattern) acceptsOtherVersion(served) bool {
	return !p.policy.IR.Imported()
}

func (p pattern) wildcardResource() bool {
	return slices.Contains(p.resources, "*")
}

// describe writes the pattern as resource.group (version).
func (p pattern) describe() string {
	var parts []string
	for _, g := range p.groups {
		for _, r := range p.resources {
			gr := schema.GroupResource{Group: g, Resource: r}
			parts = append(parts, gr.String())
		}
	}
	return strings.Join(parts, ", ") + " (" + strings.Join(p.versions, ", ") + ")"
}

func names(list []string, name string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, name)
}

// servedResources lists every resource the API server serves with the
// list verb (subresources left out), flagging each group's preferred
// version. A group that failed discovery is an error when a pattern may
// name it.
func servedResources(disc discovery.ServerResourcesInterface, patterns []pattern) ([]served, error) {
	groups, lists, err := disc.ServerGroupsAndResources()
	if err != nil {
		var failed *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &failed) || len(lists) == 0 {
			return nil, fmt.Errorf("discover the API server's resources: %w", err)
		}
		for gv, gerr := range failed.Groups {
			if slices.ContainsFunc(patterns, func(p pattern) bool { return names(p.groups, gv.Group) }) {
				return nil, fmt.Errorf("discover the API server's resources of %s: %w", gv, gerr)
			}
		}
	}
	preferred := map[string]string{}
	for _, g := range groups {
		preferred[g.Name] = g.PreferredVersion.Version
	}
	var out []served
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			out = append(out, served{gvr: gv.WithResource(r.Name), kind: r.Kind, namespaced: r.Namespaced, preferred: preferred[gv.Group] == gv.Version})
		}
	}
	return out, nil
}

// CheckParamKinds checks that the API server serves the kind of every
// parameter object the policies read from the cluster (ErrNotServed
// otherwise): the API server would fail every such policy's bindings.
func (a *Auditor) CheckParamKinds(disc discovery.ServerResourcesInterface) error {
	for _, k := range a.set.ParamKinds() {
		list, err := disc.ServerResourcesForGroupVersion(k.APIVersion)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("discover %s: %w", k.APIVersion, err)
		}
		if list == nil || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == k.Kind && !strings.Contains(r.Name, "/") }) {
			return fmt.Errorf("%w: paramKind %s %s, which policies read parameter objects of", ErrNotServed, k.APIVersion, k.Kind)
		}
	}
	return nil
}

// mayMatch says whether p may match objects of t's resource: a rule of
// its names the group and resource (or "*"), in t's scope. Versions are
// left to the engine's matcher: a superset is safe, the engine decides.
func mayMatch(p *ir.Policy, t Target) bool {
	g, r := t.Resource.Group, t.Resource.Resource
	if !p.Imported() {
		return slices.ContainsFunc(p.Match.Resources, func(res ir.Resource) bool { return res.Group == g && res.Resource == r })
	}
	return slices.ContainsFunc(p.MatchConstraints.ResourceRules, func(rule ir.ResourceRule) bool {
		scope := scopeOf(rule.Scope)
		return names(rule.APIGroups, g) && slices.ContainsFunc(rule.Resources, func(name string) bool {
			res, _, _ := strings.Cut(name, "/")
			return res == "*" || res == r
		}) && (scope == "*" || scope == "Namespaced" && t.Namespaced || scope == "Cluster" && !t.Namespaced)
	})
}
