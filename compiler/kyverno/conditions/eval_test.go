package conditions

import (
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/internal/kubetyped"
)

type boolExpr string

func (s boolExpr) GetExpression() string { return string(s) }
func (s boolExpr) ReturnTypes() []*cel.Type {
	return []*cel.Type{cel.BoolType, cel.StringType, cel.DynType}
}

// evalCEL compiles expr in admitc's CEL environment and evaluates it on a
// CREATE of object (YAML) by user.
func evalCEL(t *testing.T, expr, object, op string) (any, error) {
	t.Helper()
	return evalCELAs(t, expr, object, op, func(v any) any { return v })
}

// evalTyped is evalCEL with the object, old object and request presented
// as kube-apiserver 1.37 presents them for a built-in kind (kubetyped).
func evalTyped(t *testing.T, expr, object, op string) (any, error) {
	t.Helper()
	return evalCELAs(t, expr, object, op, func(v any) any { return kubetyped.Value(v) })
}

// evalCELAs is evalCEL with the activation's values passed through as.
func evalCELAs(t *testing.T, expr, object, op string, as func(any) any) (any, error) {
	t.Helper()
	cc := celenv.NewCompiler(celenv.RuntimeVersion())
	res := cc.CompileCELExpression(boolExpr(expr), plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
	require.Nil(t, res.Error, "compile %s", expr)
	var obj any
	require.NoError(t, yaml.Unmarshal([]byte(object), &obj))
	obj = intsAsInt64(obj)
	req := map[string]any{"operation": op, "namespace": "default", "name": "web", "userInfo": map[string]any{"username": "system:serviceaccount:ns1:builder", "groups": []any{"dev"}}}
	_ = admissionv1.Create
	vars := map[string]any{"object": as(obj), "oldObject": nil, "request": as(req)}
	if op == "DELETE" {
		vars["object"], vars["oldObject"] = nil, as(obj)
	}
	out, _, err := res.Program.Eval(vars)
	if err != nil {
		return nil, err
	}
	return out.Value(), nil
}

func intsAsInt64(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = intsAsInt64(e)
		}
	case []any:
		for i, e := range t {
			t[i] = intsAsInt64(e)
		}
	case float64:
		if t == float64(int64(t)) && t < 1e18 && t > -1e18 {
			return int64(t)
		}
	}
	return v
}

func conditionsOf(t *testing.T, y string) string {
	t.Helper()
	var raw any
	require.NoError(t, yaml.Unmarshal([]byte(y), &raw))
	c, err := Decode(raw)
	require.NoError(t, err)
	fresh := 0
	e, err := Conditions(c, Scope{}, &fresh)
	require.NoError(t, err)
	return e
}
