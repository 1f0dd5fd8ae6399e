package webhook

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/ir"
)

// auditedVerbs are what `admitc serve --audit-interval` needs of the
// objects it audits: paginated LISTs, nothing else (no watch: each run
// lists again rather than keep every object in an informer).
var auditedVerbs = []string{"list"}

// reportVerbs are what it needs of its openreports.io Reports: get and
// list them to skip the unchanged ones, create and patch them with
// server-side apply, delete those of namespaces with no result left.
var reportVerbs = []string{"create", "delete", "get", "list", "patch"}

// auditRules are the ClusterRole rules of the audit when w asks for one:
// list every resource the validating policies select on create or update,
// and write Reports and ClusterReports; none otherwise.
func auditRules(set *ir.PolicySet, w backends.WebhookOptions) []rbacv1.PolicyRule {
	if w.AuditInterval <= 0 || !w.Deployment {
		return nil
	}
	resources := map[string]map[string]bool{}
	add := func(group, resource string) {
		if resources[group] == nil {
			resources[group] = map[string]bool{}
		}
		resources[group][resource] = true
	}
	for i := range set.Policies {
		p := &set.Policies[i]
		if p.Kind != ir.Validating {
			continue
		}
		for _, gr := range auditedResources(p) {
			add(gr[0], gr[1])
		}
	}
	var rules []rbacv1.PolicyRule
	for _, group := range sortedKeys(resources) {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{group}, Resources: sortedKeys(resources[group]), Verbs: auditedVerbs})
	}
	return append(rules, rbacv1.PolicyRule{APIGroups: []string{"openreports.io"}, Resources: []string{"clusterreports", "reports"}, Verbs: reportVerbs})
}

// auditedResources are the group and resource of every whole resource p
// matches on CREATE or UPDATE (the audit judges stored objects as either).
// Rules with wildcards are refused by Rejects before this runs.
func auditedResources(p *ir.Policy) [][2]string {
	var out [][2]string
	if !p.Imported() {
		if !slices.Contains(p.Match.Operations, ir.Create) && !slices.Contains(p.Match.Operations, ir.Update) {
			return nil
		}
		for _, r := range p.Match.Resources {
			if !r.SubresourcesOnly {
				out = append(out, [2]string{r.Group, r.Resource})
			}
		}
		return out
	}
	for _, r := range p.MatchConstraints.ResourceRules {
		if !slices.ContainsFunc(r.Operations, func(o ir.Operation) bool { return o == ir.Create || o == ir.Update || o == "*" }) {
			continue
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if !strings.Contains(res, "/") {
					out = append(out, [2]string{g, res})
				}
			}
		}
	}
	return out
}
