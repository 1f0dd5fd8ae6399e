package dialect

import (
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/internal/celenv/libs"
	"github.com/admitc/admitc/ir"
)

func kyvernoPolicy(exprs ...string) *ir.Policy {
	p := &ir.Policy{Name: "p", CEL: ir.CELKyverno, Kind: ir.Validating, FailurePolicy: ir.Fail}
	for _, e := range exprs {
		p.Validations = append(p.Validations, ir.Validation{Expression: e, Message: "m"})
	}
	return p
}

// rewriteCases are Kyverno expressions and their text for the API server.
var rewriteCases = map[string]string{
	"object.spec.containers.all(c, c.name != '')":                                                                           "object.spec.containers.all(c, c.name != '')",
	"object.spec.containers.all(c, c.volumeMounts.orValue([]).size() < 3)":                                                  "object.spec.containers.all(c, (type(c.volumeMounts) == type(optional.none()) ? (c.volumeMounts).orValue([]) : (c.volumeMounts)).size() < 3)",
	"object.?spec.?hostNetwork.orValue(false) == false":                                                                     "object.?spec.?hostNetwork.orValue(false) == false",
	"request.object.metadata.name != request.oldObject.metadata.name":                                                       "object.metadata.name != oldObject.metadata.name",
	"object.spec.containers.all(c, !(c.image in exceptions.allowedImages))":                                                 "object.spec.containers.all(c, !(c.image in dyn([])))",
	"object.metadata.labels.orValue(object.metadata.annotations).size() > 0":                                                "(type(object.metadata.labels) == type(optional.none()) ? (object.metadata.labels).orValue(object.metadata.annotations) : (type(object.metadata.annotations) == type(object.metadata.annotations) ? (object.metadata.labels) : (object.metadata.labels))).size() > 0",
	"[1, 2].orValue([]).size() == 2":                                                                                        "([1, 2]).size() == 2",
	"parseServiceAccount(object.metadata.name).Namespace + '/' + parseServiceAccount(object.metadata.name).Name != 'a/b:c'": "",
	"object.spec.containers.map(c, c.?securityContext.orValue({}).orValue({})).size() > 0":                                  "object.spec.containers.map(c, (type(c.?securityContext.orValue({})) == type(optional.none()) ? (c.?securityContext.orValue({})).orValue({}) : (c.?securityContext.orValue({})))).size() > 0",
}

// TestRewritesForTheAPIServer shows each rewrite's text.
func TestRewritesForTheAPIServer(t *testing.T) {
	for in, want := range rewriteCases {
		t.Run(in, func(t *testing.T) {
			out, refusals := ForAPIServer(kyvernoPolicy(in), nil)
			require.Empty(t, refusals)
			if want == "" {
				return // its decisions are checked by TestRewrittenExpressionsDecideAsKyverno
			}
			assert.Equal(t, want, out.Validations[0].Expression)
			assert.Equal(t, ir.CELKubernetes, out.CEL)
		})
	}
}

// rewriteObjects are objects on which the rewritten expressions must
// decide as the original ones do in Kyverno's environment.
var rewriteObjects = []map[string]any{
	{"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1"}}, "spec": map[string]any{"hostNetwork": true, "containers": []any{
		map[string]any{"name": "c", "image": "nginx", "volumeMounts": []any{map[string]any{"name": "v"}}, "securityContext": map[string]any{"privileged": true}},
	}}},
	{"metadata": map[string]any{"name": "b", "annotations": map[string]any{"y": "2"}}, "spec": map[string]any{"containers": []any{
		map[string]any{"name": "", "image": "nginx"},
		map[string]any{"name": "d", "image": "x", "volumeMounts": nil},
	}}},
	{"metadata": map[string]any{"name": "c", "labels": nil}, "spec": map[string]any{"containers": []any{
		map[string]any{"name": "e", "volumeMounts": []any{1, 2, 3, 4}, "securityContext": nil},
	}}},
	{"metadata": map[string]any{"name": "d"}, "spec": map[string]any{"hostNetwork": "yes", "containers": "none"}},
	{"metadata": map[string]any{"name": "system:serviceaccount:a:b:c"}, "spec": map[string]any{}},
	{"metadata": map[string]any{"name": "system:serviceaccount:nocolon"}, "spec": map[string]any{}},
	{"metadata": map[string]any{"name": "system:serviceaccount:é:ü"}, "spec": map[string]any{}},
	{"metadata": map[string]any{"name": 7}, "spec": map[string]any{}},
}

// TestRewrittenExpressionsDecideAsKyverno evaluates every case in
// Kyverno's environment and, rewritten, in the API server's, on every
// object: the same value, or an error in both.
func TestRewrittenExpressionsDecideAsKyverno(t *testing.T) {
	for in := range rewriteCases {
		out, refusals := ForAPIServer(kyvernoPolicy(in), nil)
		require.Empty(t, refusals, in)
		for i, obj := range rewriteObjects {
			old := rewriteObjects[(i+1)%len(rewriteObjects)]
			want := evalIn(t, ir.CELKyverno, in, obj, old)
			got := evalIn(t, ir.CELKubernetes, out.Validations[0].Expression, obj, old)
			assert.Equal(t, want, got, "%s on object %d (rewritten: %s)", in, i, out.Validations[0].Expression)
		}
	}
}

// evalIn evaluates expr in dialect d: "true", "false" or "error".
func evalIn(t *testing.T, d ir.CELDialect, expr string, obj, old map[string]any) string {
	t.Helper()
	p := &ir.Policy{CEL: d, Kind: ir.Validating}
	cc := celenv.NewCompilerIn(celenv.PolicyEnv(p))
	res := cc.CompileCELExpression(&validating.ValidationCondition{Expression: expr}, celenv.PolicyOptions(p), environment.StoredExpressions)
	if res.Error != nil {
		require.Failf(t, "compile", "%s in %q: %v", expr, d, res.Error)
	}
	vars := map[string]any{"object": obj, "oldObject": old, "request": map[string]any{"object": obj, "oldObject": old},
		celenv.ExceptionsVar: libs.Exception{AllowedImages: []string{}, AllowedValues: []string{}}}
	out, _, err := res.Program.Eval(vars)
	if err != nil {
		return "error"
	}
	if out == types.True {
		return "true"
	}
	return "false"
}
