package runtime_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// Kyverno passes a value equal to a pattern as written before it reads
// the pattern's alternatives, so "RuntimeDefault | Localhost" passes that
// very text. On an enum field the API server refuses any other value, and
// the typed form leaves that test out: type in ["RuntimeDefault",
// "Localhost"]. Offline, an object that holds the text itself is judged
// by the exact form, which passes it as Kyverno does.
func TestEnumFieldNeverHoldsThePatternAsWritten(t *testing.T) {
	set, withTyped, dynamic := typedAndDynamic(t, "../examples/kyverno-pattern/restrict-seccomp/policy.yaml", 3)
	p := set.Policies[0]
	assert.Contains(t, p.Validations[0].Expression, `seccompProfile.type in ["RuntimeDefault", "Localhost"]`)
	assert.NotContains(t, p.Validations[0].Expression, `"RuntimeDefault | Localhost"`)
	assert.True(t, slices.ContainsFunc(p.SchemaReads, func(r ir.SchemaRead) bool {
		return r.Path == "spec.securityContext.seccompProfile.type" && slices.Equal(r.Enum, []string{"Localhost", "RuntimeDefault", "Unconfined"})
	}), "%+v", p.SchemaReads)
	for _, c := range []struct {
		profile string
		allowed bool
		typed   bool
	}{
		{"RuntimeDefault", true, true},
		{"Unconfined", false, true},
		{"RuntimeDefault | Localhost", true, false},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "namespace": "shop"},
			"spec": map[string]any{
				"securityContext": map[string]any{"seccompProfile": map[string]any{"type": c.profile}},
				"containers":      []any{map[string]any{"name": "c", "image": "app:1"}},
			}}}
		req := runtime.RequestFor(obj, nil, "shop")
		req.Offline = true
		want, got := decideErrorsAlike(t, dynamic, req), decideErrorsAlike(t, withTyped, req)
		require.Equal(t, want, got, c.profile)
		assert.Equal(t, c.allowed, outcome(t, got) == "allowed", "%s: %s", c.profile, got)
		fits, err := runtime.FitsSchema(&set.Policies[0], req)
		require.NoError(t, err)
		assert.Equal(t, c.typed, fits, "%s: judged by the typed form", c.profile)
	}
}
