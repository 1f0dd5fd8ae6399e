package runtime

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/internal/variants"
)

// A policy's dynamic form is compiled without the type checker
// (celenv.CompileUnchecked). On every Kyverno pattern fixture's resources
// and on variants of each (fields removed, null, of another type: the
// objects that reach the dynamic form), it decides as the same form
// type-checked: the same violations, messages and audit annotations.
func TestUncheckedDynamicFormsDecideAsChecked(t *testing.T) {
	files, err := filepath.Glob("../examples/kyverno-pattern/*/policy.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	compared, differing := 0, 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		set, diags := compiler.Compile([]compiler.Source{{Name: file, Data: data}}, compiler.Options{})
		require.Empty(t, diags.Error(), file)
		e, err := NewEngine(set)
		require.NoError(t, err)
		resourcesFile := filepath.Join(filepath.Dir(file), ".kyverno-test", "resources.yaml")
		resources, err := os.ReadFile(resourcesFile)
		if err != nil {
			continue
		}
		manifests, err := DecodeManifests(resourcesFile, resources)
		require.NoError(t, err)
		var objects []map[string]any
		for _, m := range manifests {
			objects = append(objects, m.Object.Object)
			vs, err := variants.Generate(m.Object.Object, variants.Options{Count: 2, Seed: 1})
			require.NoError(t, err)
			for _, v := range vs {
				objects = append(objects, v.Object)
			}
		}
		for i := range set.Policies {
			p := &set.Policies[i]
			if p.Dynamic == nil {
				continue
			}
			checked, err := celenv.Compile(p.Dynamic)
			require.NoError(t, err)
			unchecked, err := celenv.CompileUnchecked(p.Dynamic)
			require.NoError(t, err)
			for _, obj := range objects {
				req := RequestFor(&unstructured.Unstructured{Object: obj}, nil, "default")
				req.Offline = true
				judge := func(c *celenv.CompiledPolicy) *Result {
					res := &Result{}
					ev := e.newEvaluation(context.Background(), req, req.Object)
					if bindings := e.matchingBindings(ev, p, res); len(bindings) > 0 {
						e.validateImported(ev, i, p.Dynamic, c, bindings, res)
					}
					return res
				}
				want, got := judge(checked), judge(unchecked)
				compared++
				if !assert.Equal(t, want.Violations, got.Violations, "%s on %v", p.Name, obj["metadata"]) ||
					!assert.Equal(t, want.AuditAnnotations, got.AuditAnnotations, "%s on %v", p.Name, obj["metadata"]) {
					differing++
				}
			}
		}
	}
	t.Logf("%d decisions compared, %d differ", compared, differing)
	assert.Greater(t, compared, 3000)
}
