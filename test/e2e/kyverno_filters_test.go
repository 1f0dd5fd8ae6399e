//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// TestKyvernoFiltersOnAPIServer applies Kyverno's disallow-privileged-
// containers (Enforce), compiled with the Kyverno chart's default filters,
// and checks on kube-apiserver that it judges only what a default Kyverno
// installation judges, and that admitc test says the same of each object:
// kube-proxy's privileged pod in kube-system, the ReplicaSet a Deployment
// creates and a mirror pod the kubelet (group system:nodes) creates are
// admitted; the same pod in shop, and the Deployment itself, are denied.
// Compiled with --kyverno-filters none (as kyverno test judges), the
// kube-system pod is denied.
func TestKyvernoFiltersOnAPIServer(t *testing.T) {
	const policy = "examples/kyverno-pattern/disallow-privileged-containers/policy.yaml"
	ensureNamespace(t, "shop")
	ensureNamespace(t, "kube-system") // its ServiceAccount default: no controller-manager runs
	privileged := `{containers: [{name: kube-proxy, image: "registry.k8s.io/kube-proxy:v1.36.0", securityContext: {privileged: true}}]}`
	pod := object(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: kube-proxy-x1}\nspec: "+privileged)
	deployment := object(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: `+privileged)
	replicaSet := object(t, `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-5d8f6c7b9
  labels: {app: web, pod-template-hash: 5d8f6c7b9}
spec:
  selector: {matchLabels: {app: web, pod-template-hash: 5d8f6c7b9}}
  template:
    metadata: {labels: {app: web, pod-template-hash: 5d8f6c7b9}}
    spec: `+privileged)

	stream, stderr, code := admitc(t, "compile", "--backend", "vap", "--policies", policy)
	require.Equal(t, 0, code, stderr)
	apply(t, stream, false)
	defer deleteVAPs(t, stream)
	// Each policy takes effect on its own: wait for the Pod's and the
	// workloads' denials before checking what must be admitted.
	eventually(t, "the policy to deny a privileged pod in shop", func() bool { return !dryRunCreate(t, pod, "shop").allowed() })
	eventually(t, "the autogen policy to deny the Deployment", func() bool { return !dryRunCreate(t, deployment, "shop").allowed() })
	cases := []struct {
		name      string
		obj       *unstructured.Unstructured
		namespace string
		asNode    bool
		allowed   bool
	}{
		{"a privileged pod in shop", pod, "shop", false, false},
		{"kube-proxy in kube-system", pod, "kube-system", false, true},
		{"a Deployment", deployment, "shop", false, false},
		{"the ReplicaSet a Deployment creates", replicaSet, "shop", false, true},
		{"a mirror pod created by the kubelet", pod, "shop", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got bool
			if c.asNode {
				got = dryRunCreateAsNode(t, c.obj, c.namespace)
			} else {
				got = dryRunCreate(t, c.obj, c.namespace).allowed()
			}
			assert.Equal(t, c.allowed, got, "kube-apiserver")
			if !c.asNode {
				assert.Equal(t, c.allowed, admitcTestAllows(t, policy, c.obj, c.namespace), "admitc test")
			}
		})
	}

	unfiltered, stderr, code := admitc(t, "compile", "--backend", "vap", "--kyverno-filters", "none", "--policies", policy)
	require.Equal(t, 0, code, stderr)
	deleteVAPs(t, stream)
	apply(t, unfiltered, false)
	defer deleteVAPs(t, unfiltered)
	eventually(t, "the unfiltered policy to deny kube-proxy in kube-system", func() bool { return !dryRunCreate(t, pod, "kube-system").allowed() })
}

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(y), &u.Object))
	return u
}

// dryRunCreateAsNode dry-run creates obj as a requester in group
// system:nodes (impersonated by the admin; also in system:masters, so RBAC
// allows it, and not named system:node:*, so NodeRestriction leaves it to
// the policies) and says whether admission allowed it.
func dryRunCreateAsNode(t *testing.T, obj *unstructured.Unstructured, namespace string) bool {
	t.Helper()
	cfg := kc.restConfig()
	cfg.Impersonate.UserName = "kubelet-e2e"
	cfg.Impersonate.Groups = []string{"system:nodes", "system:masters", "system:authenticated"}
	client, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	obj = obj.DeepCopy()
	obj.SetNamespace(namespace)
	_, err = client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(namespace).Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err == nil
}

// admitcTestAllows says whether admitc test (the chart's filters, as by
// default) admits obj in namespace.
func admitcTestAllows(t *testing.T, policy string, obj *unstructured.Unstructured, namespace string) bool {
	t.Helper()
	obj = obj.DeepCopy()
	obj.SetNamespace(namespace)
	data, err := json.Marshal(obj.Object)
	require.NoError(t, err)
	file := t.TempDir() + "/object.json"
	require.NoError(t, os.WriteFile(file, data, 0o644))
	out, stderr, code := admitc(t, "test", "-o", "json", "--policies", policy, file)
	require.Contains(t, []int{0, 1}, code, stderr)
	var doc struct {
		Results []offline `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Results, 1, out)
	return doc.Results[0].Allowed
}
