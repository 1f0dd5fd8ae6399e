package mutate

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/internal/kubetyped"
)

type dynExpr string

func (s dynExpr) GetExpression() string    { return string(s) }
func (s dynExpr) ReturnTypes() []*cel.Type { return []*cel.Type{cel.AnyType} }

// evalPatch evaluates a translated overlay's Walk and Patch on object in
// admitc's CEL environment for mutations, with object passed through as.
func evalPatch(t *testing.T, m StrategicMerge, object any, as func(any) any) (string, error) {
	t.Helper()
	opts := plugincel.OptionalVariableDeclarations{HasPatchTypes: true}
	var parts []string
	for _, expr := range []string{m.Walk, m.Patch} {
		res := celenv.NewCompiler(celenv.RuntimeVersion()).CompileCELExpression(dynExpr(expr), opts, environment.NewExpressions)
		require.Nil(t, res.Error, "compile %s", expr)
		out, _, err := res.Program.Eval(map[string]any{"object": as(object)})
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprint(out))
	}
	return fmt.Sprint(parts), nil
}

// Kustomize merges list elements by name; the object's names are compared
// with the patch's without an evaluation error when an element's name is
// a map or a list, as kube-apiserver 1.37 presents a built-in object
// (where a map's equality with a string raises "no such overload").
func TestMergeByNameIsTypeSafe(t *testing.T) {
	cases := map[string]string{
		"conditional element": `{"spec": {"containers": [{"(name)": "*", "imagePullPolicy": "Always"}]}}`,
		"plain element":       `{"spec": {"containers": [{"name": "web", "imagePullPolicy": "Always"}]}}`,
	}
	const object = `{"spec": {"containers": [{"name": {"a": 1}, "image": "x"}, {"name": ["b"], "image": "y"}, {"name": "web", "image": "z"}]}}`
	for name, overlay := range cases {
		t.Run(name, func(t *testing.T) {
			var o, obj any
			require.NoError(t, json.Unmarshal([]byte(overlay), &o))
			require.NoError(t, json.Unmarshal([]byte(object), &obj))
			m, err := TranslateStrategicMerge(o)
			require.NoError(t, err)
			plain, err := evalPatch(t, m, obj, func(v any) any { return v })
			require.NoError(t, err, "1.36")
			typed, err := evalPatch(t, m, obj, func(v any) any { return kubetyped.Value(v) })
			require.NoError(t, err, "1.37")
			assert.Equal(t, plain, typed)
		})
	}
}

// A foreach entry's patch finds the object's element by name the same way.
func TestForEachMergeByNameIsTypeSafe(t *testing.T) {
	var o, obj any
	require.NoError(t, json.Unmarshal([]byte(`{"spec": {"containers": [{"name": "web", "imagePullPolicy": "Always"}]}}`), &o))
	require.NoError(t, json.Unmarshal([]byte(`{"spec": {"containers": [{"name": {"a": 1}}, {"name": ["b"]}, {"name": "web", "image": "z"}]}}`), &obj))
	expr, err := ForEachStrategicMerge(o, Elements{List: "[1]", Applied: "[0]", Element: "el", Index: "i"})
	require.NoError(t, err)
	m := StrategicMerge{Walk: "''", Patch: expr}
	plain, err := evalPatch(t, m, obj, func(v any) any { return v })
	require.NoError(t, err, "1.36")
	typed, err := evalPatch(t, m, obj, func(v any) any { return kubetyped.Value(v) })
	require.NoError(t, err, "1.37")
	assert.Equal(t, plain, typed)
	assert.Contains(t, typed, "/spec/containers/2/imagePullPolicy")
}
