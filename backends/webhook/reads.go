package webhook

import (
	"fmt"
	"path/filepath"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/ir"
)

// libraryRefusal is why the emitted Deployment could not serve p's calls of
// Kyverno's libraries that read the cluster: its RBAC grants exactly what
// the policies read, so every read must name a constant resource, and
// admitc serve has no GlobalContextEntry caches; "" when it can.
func libraryRefusal(p *ir.Policy) string {
	for _, u := range celenv.LibraryUses(p) {
		if u.Library == celenv.LibraryGlobalContext {
			return fmt.Sprintf("%s:%d:%d: %s: it reads Kyverno's globalContext, whose GlobalContextEntry caches admitc serve does not keep", filepath.Base(u.Origin.File), u.Origin.Line, u.Origin.Column, u.Origin.Path)
		}
	}
	for _, r := range celenv.ResourceReads(p) {
		switch {
		case r.Verb == "create":
			return fmt.Sprintf("%s:%d:%d: %s: it creates objects with Kyverno's resource.Post, which the webhook's service account is not granted", filepath.Base(r.Origin.File), r.Origin.Line, r.Origin.Column, r.Origin.Path)
		case !r.Known:
			return fmt.Sprintf("%s:%d:%d: %s: its resource.%s names the resource or namespace with an expression; the emitted RBAC grants only reads of resources named by constant strings", filepath.Base(r.Origin.File), r.Origin.Line, r.Origin.Column, r.Origin.Path, r.Verb)
		}
	}
	return ""
}

// libraryRules are the RBAC rules the set's reads through Kyverno's
// resource library need, by namespace ("" for cluster-wide: a
// cluster-scoped resource, or a list across namespaces): get and list of
// each resource read, sorted by group and resource.
func libraryRules(set *ir.PolicySet) map[string][]rbacv1.PolicyRule {
	verbs := map[string]map[resourceRef]map[string]bool{}
	for i := range set.Policies {
		for _, r := range celenv.ResourceReads(&set.Policies[i]) {
			gv, err := schema.ParseGroupVersion(r.APIVersion)
			if !r.Known || r.Verb == "create" || err != nil {
				continue // Rejects refuses such a policy
			}
			ref := resourceRef{gv.Group, r.Resource}
			if verbs[r.Namespace] == nil {
				verbs[r.Namespace] = map[resourceRef]map[string]bool{}
			}
			if verbs[r.Namespace][ref] == nil {
				verbs[r.Namespace][ref] = map[string]bool{}
			}
			verbs[r.Namespace][ref][r.Verb] = true
		}
	}
	out := map[string][]rbacv1.PolicyRule{}
	for ns, refs := range verbs {
		keys := make([]resourceRef, 0, len(refs))
		for ref := range refs {
			keys = append(keys, ref)
		}
		sortRefs(keys)
		for _, ref := range keys {
			out[ns] = append(out[ns], rbacv1.PolicyRule{APIGroups: []string{ref.group}, Resources: []string{ref.resource}, Verbs: sortedKeys(refs[ref])})
		}
	}
	return out
}

// sortRefs sorts resources by group, then resource.
func sortRefs(refs []resourceRef) {
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].group != refs[j].group {
			return refs[i].group < refs[j].group
		}
		return refs[i].resource < refs[j].resource
	})
}
