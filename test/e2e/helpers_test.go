//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/admitc/admitc/internal/cli"
	"github.com/admitc/admitc/runtime"
)

var kc *cluster

func TestMain(m *testing.M) {
	var err error
	kc, err = startCluster()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: cannot start the API server:", err)
		if kc != nil {
			kc.stop(true)
		}
		os.Exit(1)
	}
	if err := keepConfigMapParamsWatched(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		kc.stop(true)
		os.Exit(1)
	}
	code := m.Run()
	kc.stop(code != 0)
	if code != 0 {
		fmt.Fprintln(os.Stderr, "e2e: logs kept in", kc.dir)
	}
	os.Exit(code)
}

const repo = "../../"

// admitc runs an admitc command in-process from the repository root.
func admitc(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.NoError(t, os.Chdir(repo))
	defer os.Chdir(wd)
	var out, errOut bytes.Buffer
	code := cli.Execute(cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, args)
	return out.String(), errOut.String(), code
}

func resourceFor(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvr := runtime.ResourceFor(u.GroupVersionKind())
	ri := kc.dynamic.Resource(gvr)
	if clusterScoped(u.GetKind()) {
		return ri, nil
	}
	ns := u.GetNamespace()
	if ns == "" {
		ns = "shop"
	}
	return ri.Namespace(ns), nil
}

func clusterScoped(kind string) bool {
	switch kind {
	case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
		"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "Namespace", "ClusterRole", "ClusterRoleBinding",
		"ValidatingPolicy", "MutatingPolicy", "ClusterPolicy", "CustomResourceDefinition":
		return true
	}
	return false
}

func decode(t *testing.T, name string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	ms, err := runtime.DecodeManifests(name, data)
	require.NoError(t, err)
	out := make([]*unstructured.Unstructured, len(ms))
	for i, m := range ms {
		out[i] = m.Object
	}
	return out
}

// apply creates (or, with dryRun, dry-run creates) every object of a YAML stream.
func apply(t *testing.T, yaml string, dryRun bool) {
	t.Helper()
	for _, u := range decode(t, "stream", []byte(yaml)) {
		ri, err := resourceFor(u)
		require.NoError(t, err)
		opts := metav1.CreateOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err = ri.Create(context.Background(), u, opts)
		require.NoError(t, err, "%s %s", u.GetKind(), u.GetName())
	}
}

// deleteManaged removes everything admitc generated.
func deleteManaged(t *testing.T) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=admitc"}
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
	} {
		require.NoError(t, kc.dynamic.Resource(gvr).DeleteCollection(context.Background(), metav1.DeleteOptions{}, sel))
	}
}

// answer is what the API server said to a dry-run create.
type answer struct {
	obj      *unstructured.Unstructured
	err      error
	warnings []string
}

func (a answer) allowed() bool { return a.err == nil }

// dryRunCreate asks the API server to admit obj in namespace without storing it.
func dryRunCreate(t *testing.T, obj *unstructured.Unstructured, namespace string) answer {
	t.Helper()
	obj = obj.DeepCopy()
	obj.SetNamespace(namespace)
	ri, err := resourceFor(obj)
	require.NoError(t, err)
	kc.warnings.take()
	out, err := ri.Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return answer{obj: out, err: err, warnings: kc.warnings.take()}
}

// settleTimeout bounds each wait for the API server or a webhook to take a
// change into effect. Only a test that is failing waits this long: on a
// loaded 2-core machine the API server takes some of the translated
// policies (tens of KB of CEL) into effect after 15 s.
const settleTimeout = 60 * time.Second

// eventually polls cond for up to settleTimeout: policies take effect
// asynchronously.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func manifest(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(repo + path)
	require.NoError(t, err)
	objs := decode(t, path, data)
	require.Len(t, objs, 1)
	return objs[0]
}

func admissionGVR(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: resource}
}

func fromUnstructured(obj map[string]any, into any) error {
	return k8sruntime.DefaultUnstructuredConverter.FromUnstructured(obj, into)
}

// keepConfigMapParamsWatched installs a ValidatingAdmissionPolicy with
// ConfigMap params and a binding that match nothing, for the whole run.
//
// kube-apiserver v1.37.2 stops the shared ConfigMap informer of its
// policy plugin when the last policy with ConfigMap params goes
// (generic/policy_source.go: the orphaned param informer's cancelFunc
// stops the informer the shared factory started with it), and a later such
// policy gets the same, stopped informer back (the factory starts an
// informer once): it never sees a ConfigMap created after that, and
// answers "no params found" until the API server restarts. Tests that
// create and delete ConfigMap-param policies (audit's, then the imported
// VAP's) would otherwise depend on their order and timing. A cluster where
// such policies come and go meets the same bug; this keeps the suite about
// admitc. E2E_NO_SENTINEL=1 leaves it out: with it, go test -run
// 'TestAudit$|TestAuditBadInput|TestCompareWithTheLiveAPIServer|TestGatekeeperTemplatesAsVAPs|TestImportedVAPDecidesAsAdmitcTest'
// fails the last with "no params found".
func keepConfigMapParamsWatched() error {
	ctx := context.Background()
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": "e2e-configmap-params-sentinel"},
		"spec": map[string]any{
			"paramKind": map[string]any{"apiVersion": "v1", "kind": "ConfigMap"},
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{"sentinel.admitc.dev"}, "apiVersions": []any{"v1"},
				"operations": []any{"CREATE"}, "resources": []any{"sentinels"},
			}}},
			"validations": []any{map[string]any{"expression": "true"}},
		},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": "e2e-configmap-params-sentinel"},
		"spec": map[string]any{
			"policyName":        "e2e-configmap-params-sentinel",
			"validationActions": []any{"Deny"},
			"paramRef":          map[string]any{"name": "none", "namespace": "default", "parameterNotFoundAction": "Allow"},
		},
	}}
	if os.Getenv("E2E_NO_SENTINEL") != "" {
		return nil
	}
	if _, err := kc.dynamic.Resource(admissionGVR("validatingadmissionpolicies")).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("the ConfigMap params sentinel policy: %w", err)
	}
	if _, err := kc.dynamic.Resource(admissionGVR("validatingadmissionpolicybindings")).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("the ConfigMap params sentinel binding: %w", err)
	}
	return nil
}
