package webhook

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/ir"
)

// namespaceVerbs are what the namespace cache needs: list and watch, and
// get for the namespace the cache does not hold yet.
var namespaceVerbs = []string{"get", "list", "watch"}

// paramVerbs are what a parameter cache needs: a list and watch narrowed
// to one name (metadata.name field selector, which resourceNames
// authorize) or to a label selector.
var paramVerbs = []string{"list", "watch"}

// rbacObjects are the ServiceAccount the Deployment runs as and what lets
// `admitc serve` read what its policies read, no more (see
// ir.PolicySet.ParamSources): a ClusterRole and its ClusterRoleBinding for
// namespaces and for the paramRefs without a namespace (the request's
// namespace, so any: objects of that name only, or all of the resource
// when the paramRef selects by label; or a cluster-scoped kind), and, in
// every namespace a paramRef names, a Role and its RoleBinding for the
// objects it names or selects there. Reads through Kyverno's resource
// library (reads, by namespace) are granted get and list alike: in the
// ClusterRole without a namespace, in a Role in the namespace they name.
// With an audit interval, the ClusterRole also lists what the audit lists
// and writes its Reports (auditRules). All are named after the webhook.
func rbacObjects(w backends.WebhookOptions, sources []ir.ParamSource, reads map[string][]rbacv1.PolicyRule, audited []rbacv1.PolicyRule, labels map[string]string) []runtime.Object {
	byNamespace := map[string][]ir.ParamSource{}
	for _, src := range sources {
		byNamespace[src.Namespace] = append(byNamespace[src.Namespace], src)
	}
	namespaces := map[string]bool{}
	for ns := range byNamespace {
		namespaces[ns] = true
	}
	for ns := range reads {
		namespaces[ns] = true
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: w.Name, Namespace: w.ServiceNamespace}}
	objs := []runtime.Object{
		&corev1.ServiceAccount{
			TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta:                   metav1.ObjectMeta{Name: w.Name, Namespace: w.ServiceNamespace, Labels: labels},
			AutomountServiceAccountToken: ptr(false),
		},
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: w.Name, Labels: labels},
			Rules:      append(append([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: namespaceVerbs}}, append(paramRules(byNamespace[""]), reads[""]...)...), audited...),
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: w.Name, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: w.Name},
			Subjects:   subjects,
		},
	}
	for _, ns := range sortedKeys(namespaces) {
		if ns == "" {
			continue
		}
		meta := metav1.ObjectMeta{Name: w.Name, Namespace: ns, Labels: labels}
		objs = append(objs,
			&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"}, ObjectMeta: meta, Rules: append(paramRules(byNamespace[ns]), reads[ns]...)},
			&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"}, ObjectMeta: meta,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: w.Name}, Subjects: subjects})
	}
	return objs
}

// resourceRef is a resource of an API group.
type resourceRef struct{ group, resource string }

// paramRules allow listing and watching what sources read: per resource
// (its kind's conventional plural, ir.ResourceForKind), the objects they
// name (resourceNames), or all of them when one selects by label. Rules
// are sorted by group and resource.
func paramRules(sources []ir.ParamSource) []rbacv1.PolicyRule {
	names := map[resourceRef]map[string]bool{}
	for _, src := range sources {
		gv, err := schema.ParseGroupVersion(src.Kind.APIVersion)
		if err != nil {
			continue // the compiler refuses such a paramKind
		}
		ref := resourceRef{gv.Group, ir.ResourceForKind(gv.Group, src.Kind.Kind)}
		if _, ok := names[ref]; !ok {
			names[ref] = map[string]bool{}
		}
		if names[ref] != nil && src.Name != "" {
			names[ref][src.Name] = true
		} else {
			names[ref] = nil // selected by label: every object of the resource
		}
	}
	refs := make([]resourceRef, 0, len(names))
	for ref := range names {
		refs = append(refs, ref)
	}
	sortRefs(refs)
	rules := make([]rbacv1.PolicyRule, 0, len(refs))
	for _, ref := range refs {
		var resourceNames []string
		if names[ref] != nil {
			resourceNames = sortedKeys(names[ref])
		}
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{ref.group}, Resources: []string{ref.resource}, ResourceNames: resourceNames, Verbs: paramVerbs})
	}
	return rules
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
