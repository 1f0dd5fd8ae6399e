package kubeschema

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestBuiltinPod(t *testing.T) {
	r, err := NewResolver()
	require.NoError(t, err)
	pod, ok := r.Schema(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	require.True(t, ok)
	assert.Equal(t, Object, pod.Shape())
	assert.True(t, pod.AlwaysPresent("spec"), "PodSpec is a struct")
	assert.True(t, pod.AlwaysPresent("metadata"))
	spec, _ := pod.Field("spec")
	assert.True(t, spec.AlwaysPresent("containers"), "required")
	assert.False(t, spec.AlwaysPresent("initContainers"))
	assert.False(t, spec.AlwaysPresent("hostNetwork"), "a bool with omitempty")
	containers, _ := spec.Field("containers")
	assert.Equal(t, List, containers.Shape())
	c := containers.Items()
	assert.True(t, c.AlwaysPresent("resources"), "ResourceRequirements is a struct")
	assert.False(t, c.AlwaysPresent("securityContext"), "a pointer")
	sc, _ := c.Field("securityContext")
	priv, _ := sc.Field("privileged")
	assert.Equal(t, Boolean, priv.Shape())
	res, _ := c.Field("resources")
	limits, _ := res.Field("limits")
	assert.Equal(t, Map, limits.Shape())
	assert.Equal(t, String, limits.Values().Shape(), "a quantity is a string")
	ports, _ := c.Field("ports")
	port, _ := ports.Items().Field("containerPort")
	assert.Equal(t, Integer, port.Shape())
	meta, _ := pod.Field("metadata")
	labels, _ := meta.Field("labels")
	assert.Equal(t, Map, labels.Shape())
	probe, _ := c.Field("livenessProbe")
	httpGet, _ := probe.Field("httpGet")
	hp, _ := httpGet.Field("port")
	assert.Equal(t, IntOrString, hp.Shape())
	assert.True(t, httpGet.AlwaysPresent("port"))

	dep, ok := r.Schema(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	require.True(t, ok)
	dspec, _ := dep.Field("spec")
	assert.True(t, dspec.AlwaysPresent("template"))
	tpl, _ := dspec.Field("template")
	assert.True(t, tpl.AlwaysPresent("spec"))
	_, ok = r.Schema(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	assert.False(t, ok)
}
