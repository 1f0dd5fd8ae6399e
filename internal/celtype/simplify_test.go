package celtype

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

func serviceEnv(t *testing.T) Env {
	r, err := kubeschema.NewResolver()
	require.NoError(t, err)
	svc, ok := r.Schema(schema.GroupVersionKind{Version: "v1", Kind: "Service"})
	require.True(t, ok)
	obj := FromSchema(svc, "")
	old := obj
	old.Nullable = true
	return Env{Vars: map[string]Type{"object": obj, "oldObject": old, "request.operation": {Kind: String}}, Operations: []ir.Operation{ir.Create, ir.Update}}
}

func TestSimplify(t *testing.T) {
	for src, want := range map[string]string{
		`[dyn([[(request.operation == 'DELETE' ? oldObject : object)].map(x0, type(x0) == map && 'spec' in x0 ? x0['spec'] : null)[0]].map(x1, type(x1) == map && 'type' in x1 ? x1['type'] : null)[0])].map(x2, type(x2) == string ? x2 : '')[0]`: `object.spec.?type.orValue("")`,
		`type(object.spec.ports) == list ? size(object.spec.ports) : 0`: `size(object.spec.ports)`,
	} {
		s := New(serviceEnv(t))
		got, _, err := s.Expr(src)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}

func TestBindIdiomInlines(t *testing.T) {
	s := New(serviceEnv(t))
	got, _, err := s.Expr(`[[object].map(x0, x0.spec)[0]].map(x1, x1.type)[0]`)
	require.NoError(t, err)
	assert.Equal(t, `object.spec.type`, got)
}
