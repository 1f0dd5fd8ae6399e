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

// readVerbs are what an informer needs: list and watch, and get for the
// namespace the cache does not hold yet.
var readVerbs = []string{"get", "list", "watch"}

// rbacObjects are the ServiceAccount the Deployment runs as, the
// ClusterRole that lets `admitc serve` watch what its policies read
// (namespaces, and exactly the parameter kinds they name: no wildcard) and
// the ClusterRoleBinding between them, all named after the webhook.
func rbacObjects(w backends.WebhookOptions, kinds []ir.ParamKind, labels map[string]string) []runtime.Object {
	return []runtime.Object{
		&corev1.ServiceAccount{
			TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta:                   metav1.ObjectMeta{Name: w.Name, Namespace: w.ServiceNamespace, Labels: labels},
			AutomountServiceAccountToken: ptr(false),
		},
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: w.Name, Labels: labels},
			Rules:      readRules(kinds),
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: w.Name, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: w.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: w.Name, Namespace: w.ServiceNamespace}},
		},
	}
}

// readRules allow reading namespaces and the resources serving kinds, one
// rule per API group, groups and resources sorted. A kind's resource is
// its conventional plural (ir.ResourceForKind).
func readRules(kinds []ir.ParamKind) []rbacv1.PolicyRule {
	byGroup := map[string]map[string]bool{"": {"namespaces": true}}
	for _, k := range kinds {
		gv, err := schema.ParseGroupVersion(k.APIVersion)
		if err != nil {
			continue // the compiler refuses such a paramKind
		}
		if byGroup[gv.Group] == nil {
			byGroup[gv.Group] = map[string]bool{}
		}
		byGroup[gv.Group][ir.ResourceForKind(gv.Group, k.Kind)] = true
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	rules := make([]rbacv1.PolicyRule, 0, len(groups))
	for _, g := range groups {
		resources := make([]string, 0, len(byGroup[g]))
		for r := range byGroup[g] {
			resources = append(resources, r)
		}
		sort.Strings(resources)
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: resources, Verbs: readVerbs})
	}
	return rules
}
