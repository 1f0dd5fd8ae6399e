package audit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
)

// testDiscovery serves pods, namespaces, apps/v1 and apps/v1beta2
// deployments, a resource without list, a subresource and ConfigMaps.
func testDiscovery() *fakediscovery.FakeDiscovery {
	list := []string{"get", "list", "watch", "create"}
	return &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: list},
			{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: []string{"get", "patch"}},
			{Name: "namespaces", Kind: "Namespace", Verbs: list},
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: list},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: list}}},
		{GroupVersion: "apps/v1beta2", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: list}}},
	}}}
}

func targetNames(ts []Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Resource.String()+" "+t.Kind)
	}
	return out
}

// TestPlanListsWhatThePoliciesSelect resolves rules through discovery:
// the preferred version unless a rule names another, wildcards over
// served resources only, subresources and resources without list left
// out, scopes respected.
func TestPlanListsWhatThePoliciesSelect(t *testing.T) {
	for name, tc := range map[string]struct {
		rules string
		want  []string
	}{
		"named resources": {`[{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods, pods/status]}, {apiGroups: [apps], apiVersions: ["*"], operations: [CREATE, UPDATE], resources: [deployments]}]`,
			[]string{"/v1, Resource=pods Pod", "apps/v1, Resource=deployments Deployment"}},
		"a version the rule names": {`[{apiGroups: [apps], apiVersions: [v1beta2], operations: [CREATE], resources: [deployments]}]`,
			[]string{"apps/v1beta2, Resource=deployments Deployment"}},
		"every resource of the cluster scope": {`[{apiGroups: ["*"], apiVersions: ["*"], operations: ["*"], resources: ["*"], scope: Cluster}]`,
			[]string{"/v1, Resource=namespaces Namespace"}},
		"every resource and subresource": {`[{apiGroups: [""], apiVersions: ["*"], operations: [CREATE], resources: ["*/*"]}]`,
			[]string{"/v1, Resource=configmaps ConfigMap", "/v1, Resource=namespaces Namespace", "/v1, Resource=pods Pod"}},
		"subresources only": {`[{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods/status]}]`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			a, err := New(compile(t, vap("p", tc.rules)), Options{})
			require.NoError(t, err)
			got, err := a.Plan(testDiscovery())
			require.NoError(t, err)
			assert.Equal(t, tc.want, targetNames(got))
		})
	}
}

// TestPlanRefusesAResourceNotServed: a policy naming a resource the API
// server does not serve is bad input, not an empty audit.
func TestPlanRefusesAResourceNotServed(t *testing.T) {
	a, err := New(compile(t, vap("widgets", `[{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}]`)), Options{})
	require.NoError(t, err)
	_, err = a.Plan(testDiscovery())
	require.ErrorIs(t, err, ErrNotServed)
	assert.EqualError(t, err, `not served: policy "widgets" matches widgets.example.com (v1), which the API server does not serve`)
}

// TestCheckParamKinds: a paramKind the API server does not serve is bad
// input.
func TestCheckParamKinds(t *testing.T) {
	a, err := New(compile(t, testPolicies), Options{})
	require.NoError(t, err)
	require.NoError(t, a.CheckParamKinds(testDiscovery()))
	text := vap("p", `[{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]`)
	text = text[:len(text)-len("  validations:\n  - expression: 'true'\n")] + "  paramKind: {apiVersion: example.com/v1, kind: Limits}\n  validations:\n  - expression: 'true'\n"
	a, err = New(compile(t, text), Options{})
	require.NoError(t, err)
	err = a.CheckParamKinds(testDiscovery())
	assert.ErrorIs(t, err, ErrNotServed)
}

// vap is a policy with the given resource rules and a binding.
func vap(name, rules string) string {
	return `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ` + name + `}
spec: {policyName: ` + name + `, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: ` + name + `}
spec:
  matchConstraints:
    resourceRules: ` + rules + `
  validations:
  - expression: 'true'
`
}
