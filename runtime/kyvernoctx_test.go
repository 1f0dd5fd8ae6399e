package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func configMap(ns, name string, labels map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name, "namespace": ns}
	if labels != nil {
		md["labels"] = labels
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}}
}

// TestStaticObjectsServeKyvernosLibraries: a cluster lists every namespace
// for "" and selects by labels; kyverno test's fake context lists exactly
// the namespace asked for, ignores labels, and fails a resource it has no
// object of; a missing object is NotFound in both.
func TestStaticObjectsServeKyvernosLibraries(t *testing.T) {
	objs := []*unstructured.Unstructured{configMap("a", "x", map[string]any{"tier": "gold"}), configMap("b", "y", nil)}
	names := func(s *StaticObjects, ns string, l map[string]string) ([]string, error) {
		list, err := s.ListResources("v1", "configmaps", ns, l)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, o := range list.Items {
			out = append(out, o.GetNamespace()+"/"+o.GetName())
		}
		return out, nil
	}
	cluster := &StaticObjects{Objects: objs}
	got, err := names(cluster, "", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a/x", "b/y"}, got)
	got, _ = names(cluster, "", map[string]string{"tier": "gold"})
	assert.Equal(t, []string{"a/x"}, got)

	fake := &StaticObjects{Objects: objs, FakeContext: true}
	got, _ = names(fake, "", nil)
	assert.Empty(t, got)
	got, _ = names(fake, "b", map[string]string{"tier": "gold"})
	assert.Equal(t, []string{"b/y"}, got)
	_, err = fake.ListResources("v1", "secrets", "a", nil)
	assert.EqualError(t, err, "secrets resource not found")

	_, err = cluster.GetResource("v1", "configmaps", "a", "nope")
	assert.EqualError(t, err, `configmaps "nope" not found`)
	o, err := fake.GetResource("v1", "configmaps", "b", "y")
	require.NoError(t, err)
	assert.Equal(t, "y", o.GetName())

	g := &StaticObjects{GlobalContext: map[string]any{"limits": map[string]any{"max": int64(3)}}}
	v, err := g.GetGlobalReference("limits", "max")
	require.NoError(t, err)
	assert.Equal(t, int64(3), v)
	v, err = g.GetGlobalReference("missing", "")
	assert.NoError(t, err)
	assert.Nil(t, v)
	_, err = g.GetGlobalReference("limits", "min")
	assert.EqualError(t, err, `projection "min" not found in global context entry "limits"`)
}
