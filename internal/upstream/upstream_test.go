package upstream

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/generate"
	"github.com/admitc/admitc/runtime"
)

func engineFor(t *testing.T, policy string) *Engine {
	t.Helper()
	src, err := compiler.ReadSources([]string{"../../examples/policies/" + policy})
	require.NoError(t, err)
	res, diags, err := generate.Run(generate.Request{Sources: src, Backends: []string{"vap", "map"}, Options: backends.Options{Namespaces: []string{"shop"}}})
	require.NoError(t, err)
	require.Empty(t, diags)
	var stream []byte
	for _, f := range res.Files {
		if len(f.Data) > 0 {
			stream = append(append(stream, f.Data...), []byte("---\n")...)
		}
	}
	objs, err := Parse("generated", stream[:len(stream)-4])
	require.NoError(t, err)
	objs.Namespaces = map[string]map[string]string{"shop": nil}
	e, err := New(objs)
	require.NoError(t, err)
	t.Cleanup(e.Close)
	return e
}

func object(t *testing.T, path string) *unstructured.Unstructured {
	data, err := os.ReadFile("../../examples/" + path)
	require.NoError(t, err)
	ms, err := runtime.DecodeManifests(path, data)
	require.NoError(t, err)
	return ms[0].Object
}

func TestUpstreamPluginsJudgeGeneratedPolicies(t *testing.T) {
	e := engineFor(t, "policies.json")
	d, err := e.Admit(context.Background(), object(t, "manifests/privileged.json"), "shop")
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Contains(t, d.Message, `ValidatingAdmissionPolicy 'disallow-privileged' with binding 'disallow-privileged' denied request: container "web" is privileged (spec.containers[0].securityContext.privileged)`)

	d, err = e.Admit(context.Background(), object(t, "manifests/no-limit.json"), "shop")
	require.NoError(t, err)
	assert.True(t, d.Allowed, d.Message)
	assert.Len(t, d.Warnings, 1)
	c, _, _ := unstructured.NestedSlice(d.Object.Object, "spec", "containers")
	assert.Equal(t, map[string]any{"cpu": "100m", "memory": "128Mi"}, c[0].(map[string]any)["resources"].(map[string]any)["requests"])
}
