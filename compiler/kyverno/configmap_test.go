package kyverno_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// A configMap context entry is read as the policy's params: paramKind v1
// ConfigMap, a binding whose paramRef names the ConfigMap (Deny when the
// rule is Enforce, as Kyverno blocks on the rule's error; Allow when it is
// Audit, as Kyverno admits), and cm.data.KEY read from params.data.
func TestConfigMapContext(t *testing.T) {
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "n"},
		"data":     map[string]any{"names": "blocked,forbidden"},
	}}
	cases := map[string]struct {
		action  string
		params  []*unstructured.Unstructured
		name    string
		allowed bool
		denial  string
	}{
		"a name the ConfigMap lists":             {"Enforce", []*unstructured.Unstructured{cm}, "forbidden", false, "[r.rule] validation error: rule rule failed"},
		"a name it does not list":                {"Enforce", []*unstructured.Unstructured{cm}, "web", true, ""},
		"Enforce, the ConfigMap missing":         {"Enforce", nil, "web", false, "no params found for policy binding with `Deny` parameterNotFoundAction"},
		"Audit, the ConfigMap missing, admitted": {"Audit", nil, "forbidden", true, ""},
		"Audit, a name it lists, admitted":       {"Audit", []*unstructured.Unstructured{cm}, "forbidden", true, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			body := strings.Replace(denyCM, "Enforce", tc.action, 1)
			src := contextRule("    - {name: cm, configMap: {name: c, namespace: n}}\n", body)
			set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{})
			require.Empty(t, diags)
			require.Empty(t, set.Skipped)
			p := set.Policies[0]
			require.Equal(t, &ir.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}, p.ParamKind)
			want := ir.ParamDeny
			if tc.action == "Audit" {
				want = ir.ParamAllow
			}
			assert.Equal(t, &ir.ParamRef{Name: "c", Namespace: "n", ParameterNotFoundAction: want}, p.Bindings[0].ParamRef)
			assert.Equal(t, "cm", p.From.ParamsContext)
			e, err := runtime.NewEngine(set)
			require.NoError(t, err)
			obj := pod(t, `{containers: [{name: a, image: "a:1"}]}`)
			obj.SetName(tc.name)
			req := runtime.RequestFor(obj, nil, "default")
			req.Params = tc.params
			res, err := e.Admit(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, tc.allowed, res.Allowed())
			if tc.denial != "" {
				assert.Contains(t, strings.Join(res.Denials(), "\n"), tc.denial)
			}
		})
	}
}

// An entry the rule never reads is never loaded by Kyverno: no paramKind.
func TestConfigMapContextNeverRead(t *testing.T) {
	src := contextRule("    - {name: cm, configMap: {name: c}}\n", denyTeam)
	src = strings.Replace(src, "    - {name: cm", "    - {name: team, variable: {value: x}}\n    - {name: cm", 1)
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{})
	require.Empty(t, diags)
	require.Len(t, set.Policies, 1)
	assert.Nil(t, set.Policies[0].ParamKind)
	assert.Nil(t, set.Policies[0].Bindings[0].ParamRef)
}
