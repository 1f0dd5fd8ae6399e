package webhook_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/backends/webhook"
	"github.com/admitc/admitc/ir"
)

func paramPolicy(name, apiVersion, kind string) ir.Policy {
	return ir.Policy{Name: name, Kind: ir.Validating, FailurePolicy: ir.Fail,
		Match:     ir.Match{Resources: []ir.Resource{{Version: "v1", Kind: "Pod", Resource: "pods"}}, Operations: []ir.Operation{ir.Create}},
		ParamKind: &ir.ParamKind{APIVersion: apiVersion, Kind: kind}, ParamRef: &ir.ParamRef{Name: "p", ParameterNotFoundAction: ir.ParamDeny}}
}

// constraintPolicy is an imported policy whose one binding carries its
// parameter object compiled in, as a Gatekeeper constraint does.
func constraintPolicy(name, apiVersion, kind string) ir.Policy {
	p := paramPolicy(name, apiVersion, kind)
	p.MatchConstraints = &ir.MatchResources{ResourceRules: []ir.ResourceRule{{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Operations: []ir.Operation{ir.Create}}}}
	p.Bindings = []ir.Binding{{Name: "c", ParamRef: &ir.ParamRef{Name: "c"}, Params: []map[string]any{{"kind": kind}}}}
	return p
}

// refPolicy reads objects of kind as ref says.
func refPolicy(name, apiVersion, kind string, ref ir.ParamRef) ir.Policy {
	p := paramPolicy(name, apiVersion, kind)
	p.ParamRef = &ref
	return p
}

// TestRBACReadsExactlyWhatThePoliciesRead: namespaces; the objects a
// paramRef without a namespace names, in any namespace (ClusterRole,
// resourceNames), merged per resource across versions; in a namespace a
// paramRef names, a Role for what it names there, every object of the
// resource when it selects by label; a Gatekeeper constraint's kind
// (compiled in with its binding) is not read.
func TestRBACReadsExactlyWhatThePoliciesRead(t *testing.T) {
	set := &ir.PolicySet{Version: ir.Version, Policies: []ir.Policy{
		paramPolicy("registries", "v1", "ConfigMap"),
		paramPolicy("replicas", "limits.example.com/v1", "ReplicaLimit"),
		refPolicy("replicas-again", "limits.example.com/v1beta1", "ReplicaLimit", ir.ParamRef{Name: "q"}),
		refPolicy("policy", "policy.example.com/v1", "NetworkPolicy", ir.ParamRef{Namespace: "limits", Selector: &ir.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}}),
		refPolicy("limit", "v1", "ConfigMap", ir.ParamRef{Namespace: "limits", Name: "max"}),
		refPolicy("quota", "v1", "ConfigMap", ir.ParamRef{Namespace: "quotas", Name: "max"}),
		constraintPolicy("constraint", "constraints.gatekeeper.sh/v1beta1", "K8sRequiredLabels"),
	}}
	opts := backends.Options{Namespaces: []string{"shop"}, Webhook: webhook.Defaults}
	opts.Webhook.Deployment = true
	out, diags := webhook.Backend{}.Generate(set, opts)
	require.Empty(t, diags)
	var clusterRole *rbacv1.ClusterRole
	var binding *rbacv1.ClusterRoleBinding
	var account *corev1.ServiceAccount
	var deployment *appsv1.Deployment
	roles, roleBindings := map[string][]rbacv1.PolicyRule{}, map[string]*rbacv1.RoleBinding{}
	for _, o := range out.Objects {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			clusterRole = o
		case *rbacv1.ClusterRoleBinding:
			binding = o
		case *rbacv1.Role:
			roles[o.Namespace] = o.Rules
		case *rbacv1.RoleBinding:
			roleBindings[o.Namespace] = o
		case *corev1.ServiceAccount:
			account = o
		case *appsv1.Deployment:
			deployment = o
		}
	}
	require.NotNil(t, clusterRole)
	watch := []string{"list", "watch"}
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"p"}, Verbs: watch},
		{APIGroups: []string{"limits.example.com"}, Resources: []string{"replicalimits"}, ResourceNames: []string{"p", "q"}, Verbs: watch},
	}, clusterRole.Rules)
	assert.Equal(t, map[string][]rbacv1.PolicyRule{
		"limits": {
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"max"}, Verbs: watch},
			{APIGroups: []string{"policy.example.com"}, Resources: []string{"networkpolicies"}, Verbs: watch},
		},
		"quotas": {{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"max"}, Verbs: watch}},
	}, roles)
	require.NotNil(t, account)
	assert.Equal(t, "admission-system", account.Namespace)
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: account.Name, Namespace: account.Namespace}}
	require.NotNil(t, binding)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: clusterRole.Name}, binding.RoleRef)
	assert.Equal(t, subjects, binding.Subjects)
	require.Len(t, roleBindings, 2)
	for ns, b := range roleBindings {
		assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: clusterRole.Name}, b.RoleRef, ns)
		assert.Equal(t, subjects, b.Subjects, ns)
	}
	require.NotNil(t, deployment)
	assert.Equal(t, account.Name, deployment.Spec.Template.Spec.ServiceAccountName)
	assert.True(t, *deployment.Spec.Template.Spec.AutomountServiceAccountToken)
}

func TestRBACWithoutParams(t *testing.T) {
	set := &ir.PolicySet{Version: ir.Version, Policies: []ir.Policy{{Name: "p", Kind: ir.Validating,
		Match: ir.Match{Resources: []ir.Resource{{Version: "v1", Kind: "Pod", Resource: "pods"}}, Operations: []ir.Operation{ir.Create}}}}}
	opts := backends.Options{Namespaces: []string{"shop"}, Webhook: webhook.Defaults}
	opts.Webhook.Deployment = true
	out, diags := webhook.Backend{}.Generate(set, opts)
	require.Empty(t, diags)
	for _, o := range out.Objects {
		if role, ok := o.(*rbacv1.ClusterRole); ok {
			assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}}}, role.Rules)
			return
		}
	}
	t.Fatal("no ClusterRole")
}

// generated runs the backend with a Deployment and audit interval.
func generated(t *testing.T, set *ir.PolicySet, audit time.Duration) (*rbacv1.ClusterRole, *appsv1.Deployment) {
	t.Helper()
	opts := backends.Options{Namespaces: []string{"shop"}, Webhook: webhook.Defaults}
	opts.Webhook.Deployment, opts.Webhook.AuditInterval = true, audit
	out, diags := webhook.Backend{}.Generate(set, opts)
	require.Empty(t, diags)
	var role *rbacv1.ClusterRole
	var deploy *appsv1.Deployment
	for _, o := range out.Objects {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			role = o
		case *appsv1.Deployment:
			deploy = o
		}
	}
	require.NotNil(t, role)
	require.NotNil(t, deploy)
	return role, deploy
}

// TestRBACForTheAuditOnlyWhenItIsOn: with --audit-interval the ClusterRole
// may list what the validating policies select on create or update (not a
// DELETE-only policy's resource, not a subresource) and write Reports, and
// admitc serve is given the interval; without it, neither.
func TestRBACForTheAuditOnlyWhenItIsOn(t *testing.T) {
	deployments := ir.Policy{Name: "replicas", Kind: ir.Validating, FailurePolicy: ir.Fail,
		MatchConstraints: &ir.MatchResources{ResourceRules: []ir.ResourceRule{{APIGroups: []string{"apps"}, APIVersions: []string{"v1"},
			Resources: []string{"deployments", "deployments/scale", "statefulsets"}, Operations: []ir.Operation{ir.Update}}}},
		Bindings: []ir.Binding{{Name: "replicas", Actions: []ir.Action{ir.Deny}}}}
	keep := ir.Policy{Name: "keep", Kind: ir.Validating, FailurePolicy: ir.Fail,
		Match: ir.Match{Resources: []ir.Resource{{Version: "v1", Kind: "Secret", Resource: "secrets"}}, Operations: []ir.Operation{ir.Delete}}}
	set := &ir.PolicySet{Version: ir.Version, Policies: []ir.Policy{paramPolicy("registries", "v1", "ConfigMap"), deployments, keep}}

	role, deploy := generated(t, set, time.Hour)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets"}, Verbs: []string{"list"}},
		{APIGroups: []string{"openreports.io"}, Resources: []string{"clusterreports", "reports"}, Verbs: []string{"create", "delete", "get", "list", "patch"}},
	}, role.Rules[len(role.Rules)-3:])
	assert.Contains(t, strings.Join(deploy.Spec.Template.Spec.Containers[0].Args, " "), "--audit-interval 1h0m0s")

	role, deploy = generated(t, set, 0)
	for _, r := range role.Rules {
		assert.NotContains(t, r.APIGroups, "openreports.io")
		assert.NotContains(t, r.Verbs, "patch")
	}
	assert.NotContains(t, strings.Join(deploy.Spec.Template.Spec.Containers[0].Args, " "), "--audit-interval")
}
