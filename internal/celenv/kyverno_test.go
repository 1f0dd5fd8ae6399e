package celenv

import (
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/ir"
)

// dialectCase is one expression evaluated on kyvernoObject in each dialect:
// its result, or the start of its compile or evaluation error.
type dialectCase struct {
	expr                      string
	kubernetes, rule, kyverno string
}

var kyvernoObject = map[string]any{
	"metadata": map[string]any{"name": "web"},
	"spec": map[string]any{"containers": []any{
		map[string]any{"name": "a", "image": "nginx:1.27", "volumeMounts": []any{map[string]any{"name": "v"}}},
		map[string]any{"name": "b", "image": "ghcr.io/org/app@sha256:" + sha},
	}},
}

const sha = "0123456789012345678901234567890123456789012345678901234567890123"

// TestDialectsDecideAsTheirEngines shows the differences the CEL text does
// not show: the same expression in the API server's environment, in a
// Kyverno validate.cel rule's and in a Kyverno ValidatingPolicy's.
func TestDialectsDecideAsTheirEngines(t *testing.T) {
	cases := map[string]dialectCase{
		"orValue on a concrete value": {
			expr:       "object.spec.containers[0].volumeMounts.orValue([]).size() == 1",
			kubernetes: "error: no such overload", rule: "true", kyverno: "true",
		},
		"orValue on a missing field is still an error": {
			expr:       "object.spec.containers[1].volumeMounts.orValue([]).size() == 0",
			kubernetes: "error: no such key: volumeMounts", rule: "error: no such key: volumeMounts", kyverno: "error: no such key: volumeMounts",
		},
		"orValue on an optional": {
			expr:       "object.spec.?hostNetwork.orValue(false) == false",
			kubernetes: "true", rule: "true", kyverno: "true",
		},
		"cel-go regex extension": {
			expr:       "regex.replace('docker.io/nginx', '^docker\\\\.io/', 'mirror/') == 'mirror/nginx'",
			kubernetes: "compile: undeclared reference to 'regex'", rule: "compile: undeclared reference to 'regex'", kyverno: "true",
		},
		"image library": {
			expr:       "object.spec.containers.map(c, parseImageReference(c.image).registry()) == ['index.docker.io', 'ghcr.io']",
			kubernetes: "compile: undeclared reference to 'parseImageReference'", rule: "compile: undeclared reference to 'parseImageReference'", kyverno: "true",
		},
		"user library": {
			expr:       "parseServiceAccount('system:serviceaccount:shop:builder').Namespace == 'shop'",
			kubernetes: "compile: undeclared reference to 'parseServiceAccount'", rule: "compile: undeclared reference to 'parseServiceAccount'", kyverno: "true",
		},
		"request.object": {
			expr:       "request.object.metadata.name == 'web'",
			kubernetes: "compile: undefined field 'object'", rule: "compile: undefined field 'object'", kyverno: "true",
		},
		"no authorizer": {
			expr:       "authorizer.requestResource.check('get').allowed()",
			kubernetes: "compile-ok", rule: "compile-ok", kyverno: "compile: undeclared reference to 'authorizer'",
		},
		"resource library without a cluster": {
			expr:       "resource.Get('v1', 'configmaps', 'default', 'x').data.size() > 0",
			kubernetes: "compile: undeclared reference to 'resource'", rule: "compile: undeclared reference to 'resource'", kyverno: "error: failed to get resource: " + ErrNoCluster.Error(),
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, c.kubernetes, evalIn(t, ir.CELKubernetes, c.expr))
			assert.Equal(t, c.rule, evalIn(t, ir.CELKyvernoRule, c.expr))
			assert.Equal(t, c.kyverno, evalIn(t, ir.CELKyverno, c.expr))
		})
	}
}

// evalIn compiles expr as a validation in dialect d and evaluates it on
// kyvernoObject (also as request.object in Kyverno's dialect).
func evalIn(t *testing.T, d ir.CELDialect, expr string) string {
	t.Helper()
	p := &ir.Policy{CEL: d, Kind: ir.Validating}
	cc := NewCompilerIn(PolicyEnv(p))
	res := cc.CompileCELExpression(&validating.ValidationCondition{Expression: expr}, policyOptions(p), environment.StoredExpressions)
	if res.Error != nil {
		return "compile: " + firstIssue(res.Error.Detail)
	}
	if expr == "authorizer.requestResource.check('get').allowed()" {
		return "compile-ok"
	}
	vars := map[string]any{"object": kyvernoObject, "request": map[string]any{"object": kyvernoObject}}
	out, _, err := res.Program.Eval(vars)
	if err != nil {
		return "error: " + err.Error()
	}
	require.IsType(t, types.Bool(true), out)
	if out == types.True {
		return "true"
	}
	return "false"
}

// firstIssue is the message of a compile error's first issue.
func firstIssue(detail string) string {
	errs := parseDetail(ir.Origin{}, "", detail)
	return errs[0].Message
}
