package audit

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// testPolicies are imported admission policies of every kind an audit
// treats differently: bindings with their own actions and namespace
// selectors, a paramRef, a request read, an UPDATE-only and a DELETE-only
// policy.
const testPolicies = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-privileged}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}]
  validations:
  - expression: "object.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged)"
    message: no privileged containers
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-privileged-prod}
spec:
  policyName: no-privileged
  validationActions: [Deny]
  matchResources: {namespaceSelector: {matchLabels: {env: prod}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-privileged-dev}
spec:
  policyName: no-privileged
  validationActions: [Warn, Audit]
  matchResources: {namespaceSelector: {matchLabels: {env: dev}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit}
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}]
  validations:
  - expression: "object.spec.replicas <= int(params.data.max)"
    messageExpression: "'at most ' + params.data.max + ' replicas'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-limit}
spec:
  policyName: replica-limit
  validationActions: [Deny]
  paramRef: {name: limits, namespace: admission, parameterNotFoundAction: Deny}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: admins-only}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: "request.userInfo.username == 'admin'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: admins-only}
spec: {policyName: admins-only, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: locked}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [UPDATE], resources: [pods]}]
  validations:
  - expression: "!has(object.metadata.labels) || !('locked' in object.metadata.labels)"
    message: a locked pod cannot change
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: locked}
spec: {policyName: locked, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: keep-pods}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [DELETE], resources: [pods]}]
  validations:
  - expression: "false"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: keep-pods}
spec: {policyName: keep-pods, validationActions: [Deny]}
`

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	podsTarget     = Target{Resource: podsGVR, Kind: "Pod", Namespaced: true}
	deployTarget   = Target{Resource: deploymentsGVR, Kind: "Deployment", Namespaced: true}
)

func compile(t *testing.T, text string) *ir.PolicySet {
	t.Helper()
	set, diags := compiler.Compile([]compiler.Source{{Name: "policies.yaml", Data: []byte(text)}}, compiler.Options{})
	require.Empty(t, diags)
	return set
}

func object(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(text), &u.Object))
	return u
}

func pod(t *testing.T, ns, name, extra string) *unstructured.Unstructured {
	return object(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: "+name+", namespace: "+ns+", uid: uid-"+name+extra+"}\n"+
		"spec: {containers: [{name: web, image: nginx, securityContext: {privileged: "+map[bool]string{true: "true", false: "false"}[strings.HasPrefix(name, "priv")]+"}}]}")
}

func deployment(t *testing.T, ns, name string, replicas int) *unstructured.Unstructured {
	return object(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: "+name+", namespace: "+ns+"}\nspec: {replicas: "+fmt.Sprint(replicas)+"}")
}

// itoa writes n in two digits, so names sort as numbers.
func itoa(n int) string { return fmt.Sprintf("%02d", n) }

// testState is the cluster the objects live in: prod and dev namespaces,
// and the replica limit.
func testState(t *testing.T) *runtime.StaticState {
	return &runtime.StaticState{
		NamespaceLabels: map[string]map[string]string{"prod": {"env": "prod"}, "dev": {"env": "dev"}},
		ParamObjects:    []*unstructured.Unstructured{object(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: limits, namespace: admission}\ndata: {max: '3'}")},
	}
}

func results(o *ObjectResult) []string {
	var out []string
	for _, r := range o.Results {
		out = append(out, r.String())
	}
	return out
}

// TestJudgeGivesOneResultPerPolicyAndBinding judges stored objects as the
// API server would judge them created now: each binding with its own
// selector and actions, params from the cluster, a request read skipped,
// an UPDATE-only policy as an UPDATE of the object onto itself.
func TestJudgeGivesOneResultPerPolicyAndBinding(t *testing.T) {
	a, err := New(compile(t, testPolicies), Options{})
	require.NoError(t, err)
	state := testState(t)
	for name, tc := range map[string]struct {
		target Target
		obj    *unstructured.Unstructured
		want   []string
		denied bool
	}{
		"privileged in prod": {podsTarget, pod(t, "prod", "priv", ""), []string{
			"fail no-privileged (binding no-privileged-prod): no privileged containers",
			"skip admins-only: it reads request.userInfo (policies.yaml:56:17), the user who sends the request, which a stored object does not have",
			"pass locked",
		}, true},
		"privileged in dev only warns": {podsTarget, pod(t, "dev", "priv", ""), []string{
			"fail no-privileged (binding no-privileged-dev): no privileged containers",
			"skip admins-only: it reads request.userInfo (policies.yaml:56:17), the user who sends the request, which a stored object does not have",
			"pass locked",
		}, false},
		"locked pod fails as an UPDATE": {podsTarget, pod(t, "other", "web", ", labels: {locked: 'yes'}"), []string{
			"skip admins-only: it reads request.userInfo (policies.yaml:56:17), the user who sends the request, which a stored object does not have",
			"fail locked: a locked pod cannot change",
		}, true},
		"deployment over the limit": {deployTarget, deployment(t, "prod", "big", 5), []string{"fail replica-limit: at most 3 replicas"}, true},
		"deployment within it":      {deployTarget, deployment(t, "prod", "small", 2), []string{"pass replica-limit"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := a.Judge(context.Background(), tc.target, tc.obj, state)
			require.NoError(t, err)
			assert.Equal(t, tc.want, results(res))
			assert.Equal(t, tc.denied, res.Denied())
		})
	}
}

// TestPoliciesSayHowEachIsAudited: the operation each is judged with, and
// why one judges nothing.
func TestPoliciesSayHowEachIsAudited(t *testing.T) {
	a, err := New(compile(t, testPolicies), Options{})
	require.NoError(t, err)
	got := map[string]string{}
	for _, p := range a.Policies() {
		got[p.Name()] = string(p.Operation) + "|" + p.NotAudited
	}
	assert.Equal(t, map[string]string{
		"no-privileged": "CREATE|", "replica-limit": "CREATE|", "admins-only": "CREATE|", "locked": "UPDATE|",
		"keep-pods": "|it matches only DELETE, never a create or an update of a stored object",
	}, got)
}

// TestAsDenyDeniesEveryFailure: with --as-deny a Warn binding's failure
// denies too.
func TestAsDenyDeniesEveryFailure(t *testing.T) {
	a, err := New(compile(t, testPolicies), Options{AsDeny: true})
	require.NoError(t, err)
	res, err := a.Judge(context.Background(), podsTarget, pod(t, "dev", "priv", ""), testState(t))
	require.NoError(t, err)
	assert.True(t, res.Denied())
	assert.Equal(t, []ir.Action{ir.Warn, ir.Audit}, res.Results[0].Actions)
}

// TestMissingParamsAreAnError: parameterNotFoundAction Deny with no
// parameter object is the API server's configuration error, which denies.
func TestMissingParamsAreAnError(t *testing.T) {
	a, err := New(compile(t, testPolicies), Options{})
	require.NoError(t, err)
	res, err := a.Judge(context.Background(), deployTarget, deployment(t, "prod", "big", 5), &runtime.StaticState{})
	require.NoError(t, err)
	require.Len(t, res.Results, 1)
	assert.Equal(t, Error, res.Results[0].Status)
	assert.Contains(t, res.Results[0].Message, "no params found")
	assert.True(t, res.Denied())
}

// fakeLister lists from a fake dynamic client, page by page as the real
// one does (the fake ignores limit: one page).
func fakeLister(t *testing.T, objs ...k8sruntime.Object) (*dynamicfake.FakeDynamicClient, Lister) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(),
		map[schema.GroupVersionResource]string{podsGVR: "PodList", deploymentsGVR: "DeploymentList"}, objs...)
	return client, PagedLister{Client: client, PageSize: 2}
}

// collect is a Sink keeping what it is given.
type collect struct{ got []string }

func (c *collect) Object(o *ObjectResult) error {
	c.got = append(c.got, o.Ref())
	return nil
}

// TestRunStreamsInListingOrder: every object is judged and handed to the
// sink in the order listed, whatever the workers' order.
func TestRunStreamsInListingOrder(t *testing.T) {
	a, err := New(compile(t, testPolicies), Options{Workers: 4})
	require.NoError(t, err)
	var objs []k8sruntime.Object
	var want []string
	for i := range 40 {
		ns := []string{"dev", "prod"}[i/20]
		name := "web-" + itoa(i%20)
		objs = append(objs, pod(t, ns, name, ""))
		want = append(want, "Pod "+ns+"/"+name)
	}
	_, lister := fakeLister(t, objs...)
	sink := &collect{}
	cov, err := a.Run(context.Background(), Input{Targets: []Target{podsTarget}, Lister: lister, State: testState(t)}, sink)
	require.NoError(t, err)
	assert.Equal(t, want, sink.got)
	assert.True(t, cov.Complete())
	assert.Equal(t, 40, cov.Judged())
}

// TestForbiddenListIsReportedAndTheRunGoesOn: a LIST the credentials may
// not make is the resource's coverage error; the next resource is listed.
func TestForbiddenListIsReportedAndTheRunGoesOn(t *testing.T) {
	a, err := New(compile(t, testPolicies), Options{})
	require.NoError(t, err)
	client, lister := fakeLister(t, pod(t, "prod", "priv", ""))
	client.PrependReactor("list", "deployments", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewForbidden(deploymentsGVR.GroupResource(), "", nil)
	})
	tally := NewTally(a.Policies(), 5)
	cov, err := a.Run(context.Background(), Input{Targets: []Target{deployTarget, podsTarget}, Lister: lister, State: testState(t)}, tally)
	require.NoError(t, err)
	assert.False(t, cov.Complete())
	assert.True(t, cov.Resources[0].Forbidden)
	assert.True(t, cov.Resources[1].Complete)
	assert.Equal(t, 1, tally.Denied)
}

// TestUnauthorizedListStopsTheRun: expired credentials stop the run.
func TestUnauthorizedListStopsTheRun(t *testing.T) {
	a, err := New(compile(t, testPolicies), Options{})
	require.NoError(t, err)
	client, lister := fakeLister(t)
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewUnauthorized("token expired")
	})
	_, err = a.Run(context.Background(), Input{Targets: []Target{podsTarget}, Lister: lister, State: testState(t)}, &collect{})
	assert.True(t, apierrors.IsUnauthorized(err), "%v", err)
}

// cancelAfter is a Sink that cancels the run after n objects.
type cancelAfter struct {
	n      int
	cancel context.CancelFunc
	collect
}

func (c *cancelAfter) Object(o *ObjectResult) error {
	if len(c.got) == c.n {
		c.cancel()
	}
	return c.collect.Object(o)
}

// TestInterruptedRunCoversAPrefix: a cancelled run ends without error, and
// says what it judged: the first objects in listing order.
func TestInterruptedRunCoversAPrefix(t *testing.T) {
	a, err := New(compile(t, testPolicies), Options{Workers: 2})
	require.NoError(t, err)
	var objs []k8sruntime.Object
	for i := range 30 {
		objs = append(objs, pod(t, "prod", "web-"+itoa(i), ""))
	}
	_, lister := fakeLister(t, objs...)
	ctx, cancel := context.WithCancel(context.Background())
	sink := &cancelAfter{n: 5, cancel: cancel}
	cov, err := a.Run(ctx, Input{Targets: []Target{podsTarget}, Lister: lister, State: testState(t)}, sink)
	require.NoError(t, err)
	assert.True(t, cov.Interrupted)
	assert.False(t, cov.Complete())
	assert.Equal(t, len(sink.got), cov.Judged())
	for i, ref := range sink.got {
		assert.Equal(t, "Pod prod/web-"+itoa(i), ref)
	}
}

// TestOwnFormatPoliciesAreScopedAsCompiled: a policy in admitc's format
// judges what its emitted binding selects: every namespace but
// kube-system, or the namespaces given (a Namespace by its own name).
func TestOwnFormatPoliciesAreScopedAsCompiled(t *testing.T) {
	set := compile(t, "policies:\n  - name: no-privileged\n    type: disallow-privileged\n    actions: [Deny]\n")
	nsTarget := Target{Resource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace"}
	for name, tc := range map[string]struct {
		namespaces []string
		target     Target
		obj        *unstructured.Unstructured
		judged     bool
	}{
		"a namespace":             {nil, podsTarget, pod(t, "shop", "priv", ""), true},
		"kube-system":             {nil, podsTarget, pod(t, "kube-system", "priv", ""), false},
		"a namespace given":       {[]string{"shop"}, podsTarget, pod(t, "shop", "priv", ""), true},
		"a namespace not given":   {[]string{"shop"}, podsTarget, pod(t, "dev", "priv", ""), false},
		"cluster-scoped, not pod": {[]string{"shop"}, nsTarget, object(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: dev}"), false},
	} {
		t.Run(name, func(t *testing.T) {
			a, err := New(set, Options{Namespaces: tc.namespaces})
			require.NoError(t, err)
			res, err := a.Judge(context.Background(), tc.target, tc.obj, testState(t))
			require.NoError(t, err)
			assert.Equal(t, tc.judged, len(res.Results) > 0, "%v", results(res))
		})
	}
}

// TestKyvernoFiltersOnUsersDoNotSkip: the default Kyverno filters leave
// out requests by nodes (a match condition on request.userInfo); a stored
// object is judged for no one, as Kyverno's background scans judge it, so
// the policy is judged, not skipped. Its filtered namespaces stay out.
func TestKyvernoFiltersOnUsersDoNotSkip(t *testing.T) {
	data, err := os.ReadFile("../../examples/kyverno-pattern/disallow-privileged-containers/policy.yaml")
	require.NoError(t, err)
	set, err := kyverno.DefaultFilters().Apply(compile(t, string(data)))
	require.NoError(t, err)
	a, err := New(set, Options{})
	require.NoError(t, err)
	for _, p := range a.Policies() {
		assert.Empty(t, p.Skip, p.Title())
	}
	res, err := a.Judge(context.Background(), podsTarget, pod(t, "shop", "priv", ""), testState(t))
	require.NoError(t, err)
	require.Len(t, res.Results, 1)
	assert.Equal(t, Fail, res.Results[0].Status)
	res, err = a.Judge(context.Background(), podsTarget, pod(t, "kube-system", "priv", ""), testState(t))
	require.NoError(t, err)
	assert.Empty(t, res.Results, "kube-system is one of the default filters' namespaces")
}
