package kyverno

import (
	"fmt"
	"slices"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// A rule's kinds resolve to the resources that serve them: a built-in
// kind through the release's resource list, a custom resource's through
// the CRD given for it (Options.Kinds). A kind that neither resolves keeps
// a guess (every group, the kind's conventional plural), which the
// runtime can match, and is recorded on the policy (ir.UnresolvedKind) so
// that a backend that must name resources refuses it at its place.

// matchedRules are the resource rules that cover a rule's match, and the
// kinds it names that did not resolve.
type matchedRules struct {
	rules      []ir.ResourceRule
	unresolved []ir.UnresolvedKind
}

// resourceRules cover every kind the match's filters name, on their
// operations (every resource, every operation, when a filter names none):
// a kind is resolved to the resources that serve it (Pod: the core group's
// pods), and resources of one group, version and operations share a rule.
// at is the field path of the match.
func (r *reader) resourceRules(m *kyvernov1.MatchResources, at string) matchedRules {
	var out matchedRules
	seen := map[string]bool{}
	paths := filterPaths(m, at)
	for i, f := range filters(m) {
		ops := []ir.Operation{"*"}
		if len(f.Operations) > 0 {
			ops = nil
			for _, o := range f.Operations {
				ops = append(ops, ir.Operation(o))
			}
		}
		kinds := f.Kinds
		if len(kinds) == 0 {
			kinds = []string{"*/*"}
		}
		for j, k := range kinds {
			rules, ok := kindRules(k, ops, r.kinds)
			if !ok {
				out.unresolved = append(out.unresolved, ir.UnresolvedKind{Kind: k, Origin: r.origin(fmt.Sprintf("%s.resources.kinds[%d]", paths[i], j))})
			}
			for _, rr := range rules {
				key := fmt.Sprint(rr)
				if !seen[key] {
					seen[key] = true
					out.rules = append(out.rules, rr)
				}
			}
		}
	}
	out.rules = mergeRules(out.rules)
	return out
}

// filterPaths are the field paths of the filters filters(m) returns.
func filterPaths(m *kyvernov1.MatchResources, at string) []string {
	var out []string
	switch {
	case len(m.Any) > 0:
		for i := range m.Any {
			out = append(out, fmt.Sprintf("%s.any[%d]", at, i))
		}
	case len(m.All) > 0:
		for i := range m.All {
			out = append(out, fmt.Sprintf("%s.all[%d]", at, i))
		}
	default:
		out = []string{at}
	}
	return out
}

// mergeRules joins rules that differ in their resources only, in the order
// of the first of each.
func mergeRules(rules []ir.ResourceRule) []ir.ResourceRule {
	var out []ir.ResourceRule
	at := map[string]int{}
	for _, r := range rules {
		key := fmt.Sprint(r.APIGroups, r.APIVersions, r.Operations, r.Scope, r.ResourceNames)
		if i, ok := at[key]; ok && !slices.Contains(r.Resources, "*") && !slices.Contains(out[i].Resources, "*") {
			for _, res := range r.Resources {
				if !slices.Contains(out[i].Resources, res) {
					out[i].Resources = append(out[i].Resources, res)
				}
			}
			continue
		}
		at[key] = len(out)
		out = append(out, r)
	}
	return out
}

// kindRules are the resource rules that cover a Kyverno kind selector: for
// a built-in kind, its resource in each group that serves it, in the
// group's preferred version (matchPolicy Equivalent covers the others), or
// the selector's version; for a CRD's kind, its resource in the versions
// it serves (or the selector's), in its scope. A kind that neither
// resolves gets every group and the kind's conventional plural, and ok is
// false; a wildcard kind is what it says, and ok.
func kindRules(k string, ops []ir.Operation, kinds *kubeschema.Resolver) (rules []ir.ResourceRule, ok bool) {
	g, v, kind, _ := parseKindSelector(k)
	if hasWildcard(kind) || hasWildcard(g) && g != "*" || hasWildcard(v) && v != "*" {
		return []ir.ResourceRule{kindRule(k, ops)}, true
	}
	served := kinds.Resources(g, kind)
	if len(served) == 0 {
		return []ir.ResourceRule{kindRule(k, ops)}, false
	}
	var out []ir.ResourceRule
	for _, s := range served {
		res := s.Resource
		version := res.Version
		if v != "*" {
			version = v
		}
		rr := kindRule(k, ops)
		rr.APIGroups, rr.APIVersions = []string{res.Group}, []string{version}
		for i, r := range rr.Resources {
			rr.Resources[i] = res.Resource + r[len(strings.SplitN(r, "/", 2)[0]):]
		}
		if s.Custom {
			rr.Scope = scope(res.Namespaced)
		}
		out = withVersion(out, rr)
	}
	return out, true
}

// withVersion adds rr to rules, as one more version of the rule that names
// the same resources in the same group (a CRD serves several versions).
func withVersion(rules []ir.ResourceRule, rr ir.ResourceRule) []ir.ResourceRule {
	for i, r := range rules {
		if slices.Equal(r.APIGroups, rr.APIGroups) && slices.Equal(r.Resources, rr.Resources) && r.Scope == rr.Scope {
			if !slices.Contains(r.APIVersions, rr.APIVersions[0]) {
				rules[i].APIVersions = append(rules[i].APIVersions, rr.APIVersions[0])
			}
			return rules
		}
	}
	return append(rules, rr)
}

// scope is a resource rule's scope for a resource that is namespaced or not.
func scope(namespaced bool) string {
	if namespaced {
		return "Namespaced"
	}
	return "Cluster"
}

// kindRule is a resource rule that covers a Kyverno kind selector.
func kindRule(k string, ops []ir.Operation) ir.ResourceRule {
	g, v, kind, sub := parseKindSelector(k)
	group, version := g, v
	if hasWildcard(g) {
		group = "*"
	}
	if hasWildcard(v) {
		version = "*"
	}
	resource := "*"
	if !hasWildcard(kind) {
		lookup := group
		if group == "*" {
			lookup = groupOfKind(kind)
		}
		resource = ir.ResourceForKind(lookup, kind)
	}
	resources := []string{resource}
	switch {
	case sub != "" && hasWildcard(sub):
		resources = []string{resource + "/*"}
	case sub != "":
		resources = []string{resource + "/" + sub}
	case kind == "Pod" && (group == "*" || group == "") && (version == "*" || version == "v1"):
		// Kyverno lets Pod match kubectl debug's pods/ephemeralcontainers.
		resources = append(resources, "pods/ephemeralcontainers")
	}
	return ir.ResourceRule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: resources, Operations: ops, Scope: "*"}
}

// groupOfKind is the API group admitc's kind tables know for kind, or "".
func groupOfKind(kind string) string {
	if k, ok := ir.WorkloadKindByName(kind); ok {
		return k.Resource.Group
	}
	if k, ok := ir.OtherKindByName(kind); ok {
		return k.Resource.Group
	}
	return ""
}
