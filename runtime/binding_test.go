package runtime_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// paramPolicy is an imported policy whose message says which parameter
// object judged the request, with one binding naming the parameter object
// "limit" and carrying params compiled in.
func paramPolicy(params []map[string]any) *ir.PolicySet {
	o := ir.Origin{File: "inline.yaml", Path: "spec"}
	return &ir.PolicySet{Version: ir.Version, Policies: []ir.Policy{{
		Name: "limit", Type: "admission-policy", Kind: ir.Validating, Origin: o, FailurePolicy: ir.Fail,
		ParamKind:        &ir.ParamKind{APIVersion: "example.com/v1", Kind: "Limit"},
		MatchConstraints: &ir.MatchResources{ResourceRules: []ir.ResourceRule{{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Operations: []ir.Operation{ir.Create}}}},
		Validations:      []ir.Validation{{Expression: "false", MessageExpression: `"judged by " + params.spec.owner`, Origin: o}},
		Bindings: []ir.Binding{{
			Name: "shop-limit", Origin: o, Actions: []ir.Action{ir.Deny},
			ParamRef: &ir.ParamRef{Name: "limit", ParameterNotFoundAction: ir.ParamAllow},
			Params:   params,
		}},
	}}}
}

func limitParam(name, owner string) map[string]any {
	return map[string]any{"apiVersion": "example.com/v1", "kind": "Limit", "metadata": map[string]any{"name": name}, "spec": map[string]any{"owner": owner}}
}

func TestBindingParams(t *testing.T) {
	fromRequest := []*unstructured.Unstructured{{Object: limitParam("limit", "the request")}}
	cases := map[string]struct {
		compiled []map[string]any
		want     []string
	}{
		"compiled-in params win over the request's": {compiled: []map[string]any{limitParam("limit", "the binding")}, want: []string{"[limit (binding shop-limit)] judged by the binding"}},
		"paramRef still selects among them":         {compiled: []map[string]any{limitParam("other", "the binding")}},
		"without compiled-in params, the request's": {want: []string{"[limit (binding shop-limit)] judged by the request"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, err := runtime.NewEngine(paramPolicy(tc.compiled))
			require.NoError(t, err)
			req := runtime.RequestFor(manifest(t, "manifests/good.json"), nil, "shop")
			req.Params = fromRequest
			assert.Equal(t, tc.want, messages(admit(t, e, req).Violations))
		})
	}
}
