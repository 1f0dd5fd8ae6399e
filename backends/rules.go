package backends

import (
	"sort"

	"github.com/admitc/admitc/ir"
)

// ResourceRule is a group's resources with the operations they match, the
// shape of admissionregistration's RuleWithOperations.
type ResourceRule struct {
	Group      string
	Version    string
	Resources  []string
	Operations []ir.Operation
}

// RulesFor groups the resources of policies by API group, in a fixed order:
// core first, then groups alphabetically; resources in IR order, each
// followed by its subresources (pods, pods/ephemeralcontainers).
func RulesFor(policies []*ir.Policy, withSubresources bool) []ResourceRule {
	byGroup := map[string]*ResourceRule{}
	var groups []string
	for _, p := range policies {
		for _, r := range p.Match.Resources {
			if r.SubresourcesOnly && !withSubresources {
				continue
			}
			rule, ok := byGroup[r.Group]
			if !ok {
				rule = &ResourceRule{Group: r.Group, Version: r.Version}
				byGroup[r.Group] = rule
				groups = append(groups, r.Group)
			}
			if !r.SubresourcesOnly {
				rule.Resources = appendUnique(rule.Resources, r.Resource)
			}
			if withSubresources {
				for _, s := range r.Subresources {
					rule.Resources = appendUnique(rule.Resources, r.Resource+"/"+s)
				}
			}
			for _, op := range p.Match.Operations {
				rule.Operations = appendUniqueOp(rule.Operations, op)
			}
		}
	}
	sort.Strings(groups)
	out := make([]ResourceRule, 0, len(groups))
	for _, g := range groups {
		r := byGroup[g]
		sort.Slice(r.Operations, func(i, j int) bool { return opOrder(r.Operations[i]) < opOrder(r.Operations[j]) })
		out = append(out, *r)
	}
	return out
}

func opOrder(o ir.Operation) int {
	for i, x := range []ir.Operation{ir.Create, ir.Update, ir.Delete, ir.Connect} {
		if x == o {
			return i
		}
	}
	return 99
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func appendUniqueOp(list []ir.Operation, o ir.Operation) []ir.Operation {
	for _, x := range list {
		if x == o {
			return list
		}
	}
	return append(list, o)
}

// ByKind returns pointers to the policies of the given kind, in order.
func ByKind(set *ir.PolicySet, kind ir.PolicyKind) []*ir.Policy {
	var out []*ir.Policy
	for i := range set.Policies {
		if set.Policies[i].Kind == kind {
			out = append(out, &set.Policies[i])
		}
	}
	return out
}
