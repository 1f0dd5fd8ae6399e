package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
