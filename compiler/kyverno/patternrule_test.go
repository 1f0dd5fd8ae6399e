package kyverno_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// hostNetworkPolicy has two pattern rules; ACTION, EXISTING and FAILURE are
// replaced per case.
const hostNetworkPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: host-network
spec:
  failurePolicy: FAILURE
  rules:
  - name: no-host-network
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      failureAction: ACTION
      allowExistingViolations: EXISTING
      message: hostNetwork is forbidden
      pattern:
        spec:
          =(hostNetwork): false
  - name: pull-always
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      failureAction: ACTION
      pattern:
        spec:
          containers:
          - (image): "*:latest"
            imagePullPolicy: Always
`

// engines caches an engine per policy variant.
var engines = map[string]*runtime.Engine{}

func patternEngine(t *testing.T, action, existing, failure string) *runtime.Engine {
	t.Helper()
	key := action + existing + failure
	if e, ok := engines[key]; ok {
		return e
	}
	src := strings.NewReplacer("ACTION", action, "EXISTING", existing, "FAILURE", failure).Replace(hostNetworkPolicy)
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{})
	require.Empty(t, diags)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	engines[key] = e
	return e
}

func pod(t *testing.T, spec string) *unstructured.Unstructured {
	t.Helper()
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec: "+spec), &obj))
	return &unstructured.Unstructured{Object: obj}
}

// What a pattern rule decides on each operation, as Kyverno's validate
// handler does: DELETE is not evaluated; an Enforce rule that allows
// existing violations (the default) skips an UPDATE whose old object
// violates it too; an engine error follows spec.failurePolicy.
func TestPatternRuleOperations(t *testing.T) {
	const (
		good   = `{containers: [{name: a, image: "a:1"}]}`
		bad    = `{hostNetwork: true, containers: [{name: a, image: "a:1"}]}`
		broken = `{containers: [{name: a}, 1]}`
	)
	anchor := "a conditional or global anchor is not satisfied"
	pullSkipped := map[string]string{"pull-always": anchor}
	denied := "[host-network.no-host-network] validation error: hostNetwork is forbidden. rule no-host-network failed at path /spec/hostNetwork/"
	cases := map[string]struct {
		action, existing, failure string
		op                        ir.Operation
		object, old               string
		denials                   []string
		skip                      map[string]string
	}{
		"create bad":           {"Enforce", "true", "Fail", ir.Create, bad, "", []string{denied}, pullSkipped},
		"create good":          {"Enforce", "true", "Fail", ir.Create, good, "", nil, pullSkipped},
		"update bad from good": {"Enforce", "true", "Fail", ir.Update, bad, good, []string{denied}, pullSkipped},
		"update bad from bad":  {"Enforce", "true", "Fail", ir.Update, bad, bad, nil, map[string]string{"no-host-network": "the old object violates the rule too (allowExistingViolations)", "pull-always": anchor}},
		"update bad from bad, existing forbidden": {"Enforce", "false", "Fail", ir.Update, bad, bad, []string{denied}, pullSkipped},
		"update bad from bad, audit":              {"Audit", "true", "Fail", ir.Update, bad, bad, nil, pullSkipped},
		"delete bad":                              {"Enforce", "true", "Fail", ir.Delete, "", bad, nil, nil},
		"engine error, failurePolicy Fail":        {"Enforce", "true", "Fail", ir.Create, broken, "", []string{"[host-network.pull-always] expression 'variables.kyvernoOutcome == 'error' ? {}[variables.kyvernoPattern] : variables.kyvernoOutcome != 'fail'' resulted in error: no such key: error /spec/containers/1/"}, nil},
		"engine error, failurePolicy Ignore":      {"Enforce", "true", "Ignore", ir.Create, broken, "", nil, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := patternEngine(t, tc.action, tc.existing, tc.failure)
			var obj, old *unstructured.Unstructured
			if tc.object != "" {
				obj = pod(t, tc.object)
			}
			if tc.old != "" {
				old = pod(t, tc.old)
			}
			req := runtime.RequestFor(pod(t, good), old, "default")
			req.Object, req.Operation, req.Offline = obj, tc.op, true
			res, err := e.Admit(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, tc.denials, res.Denials())
			skipped := map[string]string{}
			for _, rule := range []string{"no-host-network", "pull-always"} {
				if why, ok := res.AuditAnnotations["host-network."+rule+"."+kyverno.SkipAnnotation]; ok {
					skipped[rule] = why
				}
			}
			if tc.skip == nil {
				tc.skip = map[string]string{}
			}
			assert.Equal(t, tc.skip, skipped)
		})
	}
}

// A pattern rule that matches DELETE only never runs in Kyverno: it is
// left out with its reason, not compiled to a policy that matches nothing.
func TestPatternRuleOnDeleteOnlyIsSkipped(t *testing.T) {
	src := strings.Replace(strings.NewReplacer("ACTION", "Enforce", "EXISTING", "true", "FAILURE", "Fail").Replace(hostNetworkPolicy),
		"          kinds: [Pod]\n    validate:\n      failureAction: Enforce\n      allowExistingViolations",
		"          kinds: [Pod]\n          operations: [DELETE]\n    validate:\n      failureAction: Enforce\n      allowExistingViolations", 1)
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{KeepGoing: true})
	require.Empty(t, diags)
	require.Len(t, set.Skipped, 3, "the rule and its two autogen rules")
	assert.Equal(t, "no-host-network", set.Skipped[0].From.Rule)
	assert.Equal(t, "pattern rule on DELETE only", set.Skipped[0].Feature)
	assert.Equal(t, 10, set.Skipped[0].Origin.Line)
	assert.Equal(t, []string{"host-network.pull-always", "host-network.autogen-pull-always", "host-network.autogen-cronjob-pull-always"}, policyNames(set.Policies))
}

func policyNames(ps []ir.Policy) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// A rule name that is not a valid object name (published policies have
// validate-readOnlyRootFilesystem) gives a valid IR policy name, since the
// IR name names the admission policy the vap backend emits; the rule keeps
// its own name.
func TestRuleNamesBecomeObjectNames(t *testing.T) {
	src := strings.Replace(strings.NewReplacer("ACTION", "Enforce", "EXISTING", "true", "FAILURE", "Fail").Replace(hostNetworkPolicy),
		"name: pull-always", "name: Pull Always_ForLatest", 1)
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{})
	require.Empty(t, diags)
	assert.Equal(t, []string{
		"host-network.no-host-network", "host-network.pull-always-forlatest",
		"host-network.autogen-no-host-network", "host-network.autogen-cronjob-no-host-network",
		"host-network.autogen-pull-always-forlatest", "host-network.autogen-cronjob-pull-always-forlatest",
	}, policyNames(set.Policies))
	assert.Equal(t, "Pull Always_ForLatest", set.Policies[1].From.Rule)
}

// A pattern rule's message with $( ) references: Kyverno resolves them
// against the message string itself, where no path resolves, so its
// message is the substitution error; the decision is the pattern's.
// References Kyverno's regex does not see ($( with a space) are text.
func TestPatternMessageReferencesGiveKyvernosSubstitutionError(t *testing.T) {
	src := strings.NewReplacer("ACTION", "Enforce", "EXISTING", "true", "FAILURE", "Fail",
		"message: hostNetwork is forbidden", `message: "hostNetwork is $(./../spec/hostNetwork)"`).Replace(hostNetworkPolicy)
	src = strings.Replace(src, "      pattern:\n        spec:\n          containers:", "      message: \"costs $( 5 )\"\n      pattern:\n        spec:\n          containers:", 1)
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{})
	require.Empty(t, diags)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	req := runtime.RequestFor(pod(t, `{hostNetwork: true, containers: [{name: a, image: "a:latest"}]}`), nil, "default")
	res, err := e.Admit(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"[host-network.no-host-network] validation error: variables substitution error in rule no-host-network",
		"[host-network.pull-always] validation error: costs $( 5 ). rule pull-always failed at path /spec/containers/0/imagePullPolicy/",
	}, res.Denials())
}
