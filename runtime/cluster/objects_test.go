package cluster_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/runtime"
)

// registryPolicy is a Kyverno ValidatingPolicy that reads its allowed
// registry from a ConfigMap with Kyverno's resource library.
const registryPolicy = `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: registry-from-configmap
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: >-
      object.spec.containers.all(c, c.image.startsWith(
      resource.Get("v1", "configmaps", "admission-system", "registries").data.allowed + "/"))
    message: images come from the allowed registry
  - expression: >-
      resource.List("v1", "configmaps", object.metadata.namespace).items.size() < 2
    message: at most one ConfigMap in the namespace
`

// TestKyvernoResourceLibraryReadsTheCluster: admitc serve's State answers
// Kyverno's resource.Get and resource.List from the API server as
// Kyverno's context provider does, each read seeing the cluster as it is
// now; a missing object is null (Kyverno's library), and reading a field
// of null an error, which denies (Kyverno's rule).
func TestKyvernoResourceLibraryReadsTheCluster(t *testing.T) {
	f := newFakeCluster(t, namespace("web", nil),
		param(configMap, "admission-system", "registries", nil, map[string]any{"allowed": "registry.example"}))
	set, diags := compiler.Compile([]compiler.Source{{Name: "policy.yaml", Data: []byte(registryPolicy)}}, compiler.Options{})
	require.Empty(t, diags)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	f.start(t, e.PolicySet())
	admit := func(image string) []string {
		t.Helper()
		pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "web"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}
		data, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(pod)
		require.NoError(t, err)
		req := runtime.RequestFor(&unstructured.Unstructured{Object: data}, nil, "web")
		req.Cluster = f.state
		res, err := e.Admit(context.Background(), req)
		require.NoError(t, err)
		return res.Denials()
	}
	assert.Empty(t, admit("registry.example/app:1"))
	assert.Equal(t, []string{"[registry-from-configmap] images come from the allowed registry"}, admit("registry.example.evil/app:1"))

	ctx := context.Background()
	cms := f.dynamic.Resource(configMaps)
	_, err = cms.Namespace("admission-system").Update(ctx, param(configMap, "admission-system", "registries", nil, map[string]any{"allowed": "registry.example.evil"}), metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Empty(t, admit("registry.example.evil/app:1"), "the next read sees the ConfigMap changed")

	for _, name := range []string{"a", "b"} {
		_, err = cms.Namespace("web").Create(ctx, param(configMap, "web", name, nil, nil), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"[registry-from-configmap] at most one ConfigMap in the namespace"}, admit("registry.example.evil/app:1"))

	require.NoError(t, cms.Namespace("admission-system").Delete(ctx, "registries", metav1.DeleteOptions{}))
	assert.Equal(t, []string{"[registry-from-configmap] error: no such key: data"}, admit("registry.example.evil/app:1"))
}
