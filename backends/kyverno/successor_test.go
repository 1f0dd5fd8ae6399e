package kyverno

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/admitc/admitc/ir"
)

func TestObjectName(t *testing.T) {
	for in, want := range map[string]string{
		"disallow-latest-tag":      "disallow-latest-tag",
		"Require Image Tag":        "require-image-tag",
		"policy-check_run.as:user": "policy-check-run.as-user",
		"--x..y--":                 "x.y",
		"":                         "policy",
		"a-very-long-policy-name-that-goes-on-and-on-check-every-container-image": "a-very-long-policy-name-that-goes-on-and-on-check-every-c-3c9d7c4e",
	} {
		got := ObjectName(in)
		if len(in) <= MaxNameLength {
			assert.Equal(t, want, got, in)
		}
		assert.LessOrEqual(t, len(got), MaxNameLength, in)
		assert.Empty(t, validation.IsDNS1123Subdomain(got), in)
	}
}

// rulePolicy is an imported ClusterPolicy rule, as compiler/kyverno reads it.
func rulePolicy(policy, rule, autogenOf string, resources ...string) ir.Policy {
	ref := &ir.PolicyRef{APIVersion: "kyverno.io/v1", Kind: "ClusterPolicy", Name: policy, Rule: rule, AutogenOf: autogenOf}
	return ir.Policy{
		Name: policy + "." + rule, Kind: ir.Validating, FailurePolicy: ir.Fail, From: ref,
		MatchConstraints: &ir.MatchResources{ResourceRules: []ir.ResourceRule{{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: resources, Operations: []ir.Operation{"*"}}}},
		MatchConditions:  []ir.NamedExpression{{Name: importedMatchCondition, Expression: "true"}},
		Validations:      []ir.Validation{{Expression: "true", Message: "m"}},
		Bindings:         []ir.Binding{{Name: policy + "." + rule, Actions: []ir.Action{ir.Deny}}},
	}
}

func TestSuccessorsNamesAndAutogen(t *testing.T) {
	set := &ir.PolicySet{Policies: []ir.Policy{
		rulePolicy("p", "Check Tag", "", "pods"),
		rulePolicy("p", "autogen-Check Tag", "Check Tag", "deployments"),
		rulePolicy("p", "other", "", "pods"),
	}}
	ts := Successors(set, func(_ runtime.Object, _ []*ir.Policy) string { return "differs" })
	require.Len(t, ts, 2)
	assert.Equal(t, []string{"p-check-tag", "autogen-p-check-tag"}, names(ts[0]))
	assert.Contains(t, ts[0].Notes[0], `"p-Check Tag" is not a valid policy name`)
	assert.Contains(t, ts[0].Notes[1], "autogen written out")
	assert.Equal(t, []string{"p-other"}, names(ts[1]))
	u := ts[0].Successors[0].Object.(*unstructured.Unstructured)
	controllers, found, _ := unstructured.NestedSlice(u.Object, "spec", "autogen", "podControllers", "controllers")
	assert.True(t, found)
	assert.Empty(t, controllers, "autogen off when written out")
	conds, _, _ := unstructured.NestedSlice(u.Object, "spec", "matchConditions")
	assert.Equal(t, successorMatchCondition, conds[0].(map[string]any)["name"])
	actions, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "validationActions")
	assert.Equal(t, []string{"Deny"}, actions)

	accepted := Successors(set, func(_ runtime.Object, _ []*ir.Policy) string { return "" })
	assert.Equal(t, []string{"p-check-tag"}, names(accepted[0]))
	u = accepted[0].Successors[0].Object.(*unstructured.Unstructured)
	list, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "autogen", "podControllers", "controllers")
	assert.Equal(t, []string{"deployments"}, list)
}

func names(t Translation) []string {
	var out []string
	for _, s := range t.Successors {
		out = append(out, s.Name)
	}
	return out
}

func TestSuccessorRefusals(t *testing.T) {
	withParams := rulePolicy("p", "r", "", "pods")
	withParams.ParamKind = &ir.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	twoBindings := rulePolicy("p", "r", "", "pods")
	twoBindings.Bindings = append(twoBindings.Bindings, ir.Binding{Name: "b2"})
	narrowing := rulePolicy("p", "r", "", "pods")
	narrowing.Bindings[0].MatchResources = &ir.MatchResources{ResourceRules: []ir.ResourceRule{{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/ephemeralcontainers"}}}}
	for name, c := range map[string]struct {
		p    ir.Policy
		want string
	}{
		"paramKind":    {withParams, "paramKind: a ValidatingPolicy has no paramKind"},
		"two bindings": {twoBindings, "has 2 bindings"},
		"narrowing":    {narrowing, "narrow the policy's resources"},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Contains(t, CELBackend{}.Rejects(&c.p), c.want)
			ts := Successors(&ir.PolicySet{Policies: []ir.Policy{c.p}}, nil)
			require.Len(t, ts, 1)
			assert.Contains(t, ts[0].Refusal, c.want)
			assert.Empty(t, ts[0].Successors)
		})
	}
}

// A policy that reads a parameter object has no successor; the refusal
// names what the source policy wrote (a configMap context entry, a
// validate.cel paramKind, an admission policy's paramKind) and where the
// rule is translated instead.
func TestParamKindRefusalNamesTheSource(t *testing.T) {
	const rest = ": a ValidatingPolicy has no paramKind (Kyverno's CEL policies read other objects with resource.Get; admitc does not rewrite a paramRef into that call); " +
		"the ValidatingAdmissionPolicy admitc writes for the API server keeps it, its binding's paramRef naming the object (migrate's vap.yaml, compile --backend vap)"
	configMap := rulePolicy("p", "r", "", "pods")
	configMap.ParamKind = &ir.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	configMap.From.ParamsContext = "podprioritydict"
	celRule := rulePolicy("p", "r", "", "pods")
	celRule.ParamKind = &ir.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	admission := rulePolicy("p", "r", "", "pods")
	admission.ParamKind, admission.From = &ir.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}, nil
	for name, c := range map[string]struct {
		p    ir.Policy
		want string
	}{
		"configMap context": {configMap, `context.configMap "podprioritydict" (read as the policy's paramKind ConfigMap)` + rest},
		"validate.cel":      {celRule, "validate.cel.paramKind" + rest},
		"admission policy":  {admission, "paramKind" + rest},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, c.want, CELBackend{}.Rejects(&c.p))
		})
	}
}

func TestFoldBindingSelectors(t *testing.T) {
	c := &ir.MatchResources{NamespaceSelector: &ir.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}
	b := &ir.MatchResources{NamespaceSelector: &ir.LabelSelector{MatchExpressions: []ir.LabelSelectorRequirement{{Key: "env", Operator: "NotIn", Values: []string{"prod"}}}},
		ExcludeResourceRules: []ir.ResourceRule{{Resources: []string{"pods"}}}}
	got, why := foldBinding(c, b)
	require.Empty(t, why)
	assert.Equal(t, []ir.LabelSelectorRequirement{{Key: "team", Operator: "In", Values: []string{"a"}}, {Key: "env", Operator: "NotIn", Values: []string{"prod"}}}, got.NamespaceSelector.MatchExpressions)
	assert.Len(t, got.ExcludeResourceRules, 1)
}
