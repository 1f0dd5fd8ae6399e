package runtime

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/ir"
)

// A list read with a UniqueKey fits only when no two elements share the
// key's value: two containers of one name (which the API server refuses)
// send the object to the exact form.
func TestShapeCheckUniqueKey(t *testing.T) {
	check, err := newShapeCheck([]ir.SchemaRead{
		{Path: "spec", Shape: "object", Present: true},
		{Path: "spec.containers", Shape: "list", UniqueKey: "name"},
		{Path: "spec.containers[]", Shape: "object"},
		{Path: "spec.containers[].name", Shape: "string", Present: true},
	})
	require.NoError(t, err)
	pod := func(names ...string) map[string]any {
		var cs []any
		for _, n := range names {
			cs = append(cs, map[string]any{"name": n, "image": "nginx"})
		}
		return map[string]any{"spec": map[string]any{"containers": cs}}
	}
	assert.True(t, check.root.fits(pod("a", "b")))
	assert.True(t, check.root.fits(pod()))
	assert.False(t, check.root.fits(pod("a", "b", "a")), "two containers named a")
}

// A string read with a format fits only when it is of that format (a
// quantity parses, a label is a DNS label): the API server refuses the
// object otherwise, and offline it is judged by the exact form.
func TestShapeCheckFormat(t *testing.T) {
	check, err := newShapeCheck([]ir.SchemaRead{
		{Path: "resources.limits", Shape: "map"},
		{Path: "resources.limits[]", Shape: "string", Format: ir.FormatQuantity},
	})
	require.NoError(t, err)
	limits := func(v any) map[string]any {
		return map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": v}}}
	}
	assert.True(t, check.root.fits(limits("1Gi")))
	assert.True(t, check.root.fits(limits("500m")))
	assert.False(t, check.root.fits(limits("lots")), "not a quantity")
	assert.False(t, check.root.fits(limits("")), "empty")
	assert.False(t, check.root.fits(limits(int64(1))), "a number: admission sees a string")

	labels, err := newShapeCheck([]ir.SchemaRead{{Path: "name", Shape: "string", Format: ir.FormatDNSLabel}})
	require.NoError(t, err)
	assert.True(t, labels.root.fits(map[string]any{"name": "cache-1"}))
	assert.False(t, labels.root.fits(map[string]any{"name": "Cache"}), "not a DNS label")
	assert.False(t, labels.root.fits(map[string]any{"name": "cache*"}), "a wildcard is no label")

	values, err := newShapeCheck([]ir.SchemaRead{{Path: "labels", Shape: "map"}, {Path: "labels.team", Shape: "string", Format: ir.FormatLabelValue}})
	require.NoError(t, err)
	assert.True(t, values.root.fits(map[string]any{"labels": map[string]any{"team": "Team-7"}}))
	assert.True(t, values.root.fits(map[string]any{"labels": map[string]any{"team": ""}}), "an empty value is one")
	assert.False(t, values.root.fits(map[string]any{"labels": map[string]any{"team": "équipe"}}), "not ASCII")
}

// A typed policy is matched before its form is chosen: a Pod never fits
// the schema of a policy for Deployments, and judging it must not compile
// that policy's dynamic form (it took seconds per policy, and memory in
// every audit). The Pod fits its own policy's schema, so no dynamic form
// is compiled at all.
func TestDynamicFormsOfOtherKindsAreNotCompiled(t *testing.T) {
	src, err := compiler.ReadSources([]string{"../examples/kyverno-pattern/disallow-host-path/policy.yaml"})
	require.NoError(t, err)
	set, diags := compiler.Compile(src, compiler.Options{})
	require.Empty(t, diags)
	e, err := NewEngine(set)
	require.NoError(t, err)
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx:1.27"}}, "volumes": []any{map[string]any{"name": "h", "hostPath": map[string]any{"path": "/"}}}}}}
	res, err := e.Admit(context.Background(), RequestFor(pod, nil, "shop"))
	require.NoError(t, err)
	assert.False(t, res.Allowed(), "the Pod policy judged it")
	typed := 0
	for i, f := range e.forms {
		if f == nil || set.Policies[i].Dynamic == nil {
			continue
		}
		typed++
		assert.Nil(t, f.dynamic, "%s: dynamic form compiled", set.Policies[i].Name)
	}
	assert.Equal(t, 3, typed, "the rule and its two autogen rules are typed")
}
