package kyverno_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// contextRule is a ClusterPolicy with one Pod rule: its context entries
// and its rule body (both YAML, indented for the rule's fields).
func contextRule(entries, body string) string {
	return podRule("    context:\n" + entries + body)
}

const denyTeam = `    validate:
      failureAction: Enforce
      message: "team {{ team }} may not deploy"
      deny:
        conditions:
          any:
          - {key: "{{ team }}", operator: AnyIn, value: [blocked, unassigned]}
`

// A context variable is computed as Kyverno's variable loader computes it,
// when a query first names it: a jmesPath on the context with its default,
// a value, a jmesPath on a value, an entry reading an earlier one; an entry
// that fails fails the rule (and failurePolicy decides), one never read
// does not matter.
func TestContextVariables(t *testing.T) {
	cases := map[string]struct {
		entries string
		labels  map[string]any
		want    []string
	}{
		"jmesPath, label set": {"    - {name: team, variable: {jmesPath: request.object.metadata.labels.team, default: unassigned}}\n",
			map[string]any{"team": "payments"}, nil},
		"jmesPath, default taken": {"    - {name: team, variable: {jmesPath: request.object.metadata.labels.team, default: unassigned}}\n",
			map[string]any{}, []string{"[r.rule] team unassigned may not deploy"}},
		"value": {"    - {name: team, variable: {value: blocked}}\n",
			map[string]any{}, []string{"[r.rule] team blocked may not deploy"}},
		"jmesPath on a value": {"    - {name: team, variable: {value: '{{ request.object.metadata.labels }}', jmesPath: owner, default: unassigned}}\n",
			map[string]any{"owner": "blocked"}, []string{"[r.rule] team blocked may not deploy"}},
		"an earlier entry": {"    - {name: labels, variable: {jmesPath: request.object.metadata.labels}}\n    - {name: team, variable: {jmesPath: 'labels.team || ''unassigned'''}}\n",
			map[string]any{"team": "search"}, nil},
		"an entry never read fails": {"    - {name: broken, variable: {jmesPath: request.object.missing}}\n    - {name: team, variable: {value: search}}\n",
			map[string]any{}, nil},
		"a failing entry fails the rule": {"    - {name: team, variable: {jmesPath: request.object.metadata.labels.team}}\n",
			map[string]any{}, []string{"evaluation error"}},
		"an entry that evaluates to null fails the rule": {"    - {name: team, variable: {jmesPath: request.object.metadata.labels.team}}\n",
			map[string]any{"team": nil}, []string{"evaluated to nil"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(contextRule(tc.entries, denyTeam))}}, compiler.Options{})
			require.Empty(t, diags)
			require.Empty(t, set.Skipped)
			e, err := runtime.NewEngine(set)
			require.NoError(t, err)
			p := pod(t, `{containers: [{name: a, image: "a:1"}]}`)
			p.Object["metadata"].(map[string]any)["labels"] = tc.labels
			res, err := e.Admit(context.Background(), runtime.RequestFor(p, nil, "default"))
			require.NoError(t, err)
			if len(tc.want) == 1 && tc.want[0] == "evaluated to nil" {
				require.False(t, res.Allowed())
				assert.Contains(t, strings.Join(res.Denials(), "\n"), "failed to add context entry for variable team since it evaluated to nil")
				return
			}
			if len(tc.want) == 1 && tc.want[0] == "evaluation error" {
				require.False(t, res.Allowed())
				assert.Contains(t, strings.Join(res.Denials(), "\n"), "no such key: team")
				return
			}
			assert.Equal(t, tc.want, res.Denials())
		})
	}
}

// A context variable read at rule level is a named policy variable; a
// match condition (the rule's preconditions) computes it inline.
func TestContextVariablesAreNamedPolicyVariables(t *testing.T) {
	src := contextRule("    - {name: labels, variable: {jmesPath: request.object.metadata.labels, default: {}}}\n    - {name: team, variable: {value: '{{ labels.team || ''none'' }}'}}\n    - {name: unused, variable: {value: x}}\n",
		"    preconditions: {all: [{key: '{{ team }}', operator: NotEquals, value: exempt}]}\n"+denyTeam)
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{})
	require.Empty(t, diags)
	require.Len(t, set.Policies, 1)
	pol := set.Policies[0]
	var names []string
	for _, v := range pol.Variables {
		names = append(names, v.Name)
	}
	assert.Equal(t, []string{"kyvernoContext_labels", "kyvernoContext_team", "kyvernoDeny", "kyvernoDenyBefore", "kyvernoOutcome"}, names)
	assert.Contains(t, pol.Variables[1].Expression, "variables.kyvernoContext_labels")
	assert.Contains(t, pol.Variables[2].Expression, "variables.kyvernoContext_team")
	assert.Contains(t, pol.Validations[0].MessageExpression, "variables.kyvernoContext_team")
	for _, m := range pol.MatchConditions {
		assert.NotContains(t, m.Expression, "variables.")
	}
}

// What admitc does not translate in a rule's context is refused at the
// entry, with the reason; Kyverno's own refusals are in validation_test.go.
func TestContextRefusals(t *testing.T) {
	foreachList := `    validate:
      failureAction: Enforce
      foreach:
      - list: workers
        deny: {conditions: {any: [{key: "{{ element.name }}", operator: Equals, value: x}]}}
`
	cases := map[string]struct{ entries, body, want string }{
		"configMap named by a variable": {"    - {name: cm, configMap: {name: '{{ request.namespace }}', namespace: n}}\n", denyCM,
			`p.yaml:15:36: spec.rules[0].context[0].configMap.name: context.configMap: the ConfigMap's name "{{ request.namespace }}" has variables, which Kyverno substitutes per request; a paramRef names one ConfigMap`},
		"two configMaps": {"    - {name: cm, configMap: {name: c, namespace: n}}\n    - {name: cm2, configMap: {name: d, namespace: n}}\n", denyCM,
			`p.yaml:16:7: spec.rules[0].context[1]: context.configMap: a second configMap context entry in a rule is not translated: an admission policy reads one parameter object (its binding's paramRef); keep the data in one ConfigMap, or keep this rule under Kyverno`},
		"configMap in a foreach rule": {"    - {name: cm, configMap: {name: c, namespace: n}}\n", foreachList,
			`p.yaml:15:7: spec.rules[0].context[0]: context.configMap: configMap context entries are translated in validate rules with deny conditions or a pattern; not yet in foreach, podSecurity, cel or mutate rules: keep this rule under Kyverno`},
		"configMap read after a condition that can decide": {"    - {name: cm, configMap: {name: c, namespace: n}}\n", denyCMLate,
			`p.yaml:15:7: spec.rules[0].context[0]: context.configMap: spec.rules[0].validate.deny.conditions.any[0], the first condition or pattern Kyverno evaluates, does not read "cm", so the rule can finish without loading the ConfigMap, while the API server looks up the paramRef (ConfigMap n/c) before it evaluates anything else of the policy: where the ConfigMap is missing, requests Kyverno admits would fail. Put a condition that reads "cm" first, or keep the rule under Kyverno`},
		"apiCall": {"    - {name: cm, apiCall: {urlPath: /api/v1/namespaces}}\n", denyTeam,
			`p.yaml:15:7: spec.rules[0].context[0]: context.apiCall: Kyverno loads this context entry from the API server (or a service) at admission; an admission policy cannot: keep this rule under Kyverno (admitc verify reads the entry from a Kyverno test's values, as kyverno test does offline)`},
		"a name with a dot": {"    - {name: team.name, variable: {value: x}}\n", denyTeam,
			`p.yaml:15:14: spec.rules[0].context[0].name: context.variable: the context variable name "team.name" is not a JMESPath identifier, which admitc needs to read it: rename it (letters, digits and _, not starting with a digit)`},
		"a foreach element's name": {"    - {name: element0, variable: {value: x}}\n", denyTeam,
			`p.yaml:15:14: spec.rules[0].context[0].name: context.variable: the context variable name "element0" is also the name of a foreach element or index: rename it`},
		"two entries of one name": {"    - {name: team, variable: {value: x}}\n    - {name: team, variable: {value: y}}\n", denyTeam,
			`p.yaml:16:14: spec.rules[0].context[1].name: context.variable: a second context variable named "team" is not translated (Kyverno loads both, the later replacing the earlier): remove or rename one`},
		"a variable in the jmesPath": {"    - {name: team, variable: {jmesPath: 'request.object.metadata.labels.{{ request.namespace }}'}}\n", denyTeam,
			`p.yaml:15:41: spec.rules[0].context[0].variable.jmesPath: context.variable: {{ }} variables inside a context variable's jmesPath are not translated: read the value with a plain query (or a value with {{ }} variables), or keep this rule under Kyverno`},
		"a later entry": {"    - {name: team, variable: {jmesPath: owner}}\n    - {name: owner, variable: {value: x}}\n", denyTeam,
			`p.yaml:23:19: spec.rules[0].validate.deny.conditions.any[0].key: validate.deny: context variable team: JMESPath "owner": owner is neither declared in the rule's context before it is read nor a variable Kyverno provides that admitc translates (request, serviceAccountName, serviceAccountNamespace, images; element, elementIndex, elementN and elementIndexN inside a foreach): declare owner in the rule's context, before the entries that read it, or correct the name`},
		"a function where Kyverno handles the error": {"    - {name: workers, variable: {jmesPath: \"request.object.spec.containers[?starts_with(name, 'w')]\"}}\n", foreachList,
			`p.yaml:19:15: spec.rules[0].validate.foreach[0].list: validate.foreach list: context variable workers: JMESPath "request.object.spec.containers[?starts_with(name, 'w')]": function starts_with() is not translated where Kyverno handles an evaluation error itself (a foreach list or precondition skips the entry or the element; a context variable with a default takes the default), and a function's error is one CEL cannot catch; compute it in the rule's deny conditions or a context variable without a default, or keep the rule under Kyverno`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(contextRule(tc.entries, tc.body))}}, compiler.Options{KeepGoing: true})
			require.Empty(t, diags)
			require.Len(t, set.Skipped, 1)
			sk := set.Skipped[0]
			assert.Equal(t, tc.want, fmt.Sprintf("%s:%d:%d: %s: %s: %s", sk.Origin.File, sk.Origin.Line, sk.Origin.Column, sk.Origin.Path, sk.Feature, sk.Reason))
			assert.Empty(t, set.Policies)
		})
	}

	// A mutate.foreach rule's context stays refused.
	foreach := contextRule("    - {name: team, variable: {value: x}}\n", "    mutate:\n      foreach:\n      - list: request.object.spec.containers\n        patchStrategicMerge:\n          metadata:\n            labels:\n              team: '{{ team }}'\n")
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(foreach)}}, compiler.Options{KeepGoing: true})
	require.Empty(t, diags)
	require.Len(t, set.Skipped, 1)
	assert.Equal(t, "context.variable", set.Skipped[0].Feature)
	assert.Contains(t, set.Skipped[0].Reason, "context variables of mutate.foreach rules are not translated yet")
}

// A mutate rule reads its context variables in its patch; before patching,
// Kyverno substitutes the variables of the whole rule, so a context value
// that does not resolve fails the rule even when no patch reads it.
func TestMutateRuleContextVariables(t *testing.T) {
	const patch = `    mutate:
      patchStrategicMerge:
        metadata:
          annotations:
            team: "{{ team }}"
`
	cases := map[string]struct {
		entries string
		want    string
	}{
		"read":                 {"    - {name: team, variable: {jmesPath: request.object.metadata.labels.team, default: none}}\n", `[{"op":"add","path":"/metadata/annotations","value":{"team":"none"}}]`},
		"a value never read":   {"    - {name: team, variable: {value: web}}\n    - {name: broken, variable: {value: '{{ request.object.metadata.labels.missing }}'}}\n", "error"},
		"a default never read": {"    - {name: team, variable: {value: web}}\n    - {name: other, variable: {jmesPath: request.object.metadata.name, default: '{{ request.object.metadata.labels.missing }}'}}\n", "error"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(contextRule(tc.entries, patch))}}, compiler.Options{})
			require.Empty(t, diags)
			require.Empty(t, set.Skipped)
			e, err := runtime.NewEngine(set)
			require.NoError(t, err)
			p := pod(t, `{containers: [{name: a, image: "a:1"}]}`)
			res, err := e.Admit(context.Background(), runtime.RequestFor(p, nil, "default"))
			require.NoError(t, err)
			if tc.want == "error" {
				assert.False(t, res.Allowed())
				assert.Contains(t, strings.Join(res.Denials(), "\n"), "missing")
				return
			}
			require.True(t, res.Allowed(), res.Denials())
			data, err := json.Marshal(res.Patch)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(data))
		})
	}
}

const denyCM = `    validate:
      failureAction: Enforce
      deny:
        conditions:
          any:
          - {key: "{{ request.object.metadata.name }}", operator: AnyIn, value: "{{ split(cm.data.names, ',') }}"}
`

const denyCMLate = `    validate:
      failureAction: Enforce
      deny:
        conditions:
          any:
          - {key: "{{ request.object.metadata.name }}", operator: Equals, value: blocked}
          - {key: "{{ request.object.metadata.name }}", operator: AnyIn, value: "{{ split(cm.data.names, ',') }}"}
`

// An apiCall entry whose value a Kyverno test's values give
// (Options.ContextValues, as admitc verify sets it) holds that value as
// given: a constant, null kept, {{ }} never substituted (refused instead),
// read wherever the rule reads the entry. Without a value the entry stays
// refused.
func TestContextValuesOfAPICalls(t *testing.T) {
	const entry = "    - {name: team, apiCall: {urlPath: '/api/v1/namespaces/{{ request.namespace }}', jmesPath: metadata.labels.team}}\n"
	compile := func(values map[string]any) *ir.PolicySet {
		t.Helper()
		opts := compiler.Options{KeepGoing: true, ContextValues: func(policy, rule, name string) (any, bool) {
			assert.Equal(t, "r", policy)
			assert.Equal(t, "rule", rule)
			v, ok := values[name]
			return v, ok
		}}
		set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(contextRule(entry, denyTeam))}}, opts)
		require.Empty(t, diags)
		return set
	}
	admit := func(set *ir.PolicySet) *runtime.Result {
		t.Helper()
		e, err := runtime.NewEngine(set)
		require.NoError(t, err)
		res, err := e.Admit(context.Background(), runtime.RequestFor(pod(t, `{containers: [{name: a, image: "a:1"}]}`), nil, "default"))
		require.NoError(t, err)
		return res
	}
	for value, denied := range map[string]bool{"blocked": true, "payments": false} {
		set := compile(map[string]any{"team": value})
		require.Empty(t, set.Skipped)
		require.Len(t, set.Policies, 1)
		assert.Equal(t, "kyvernoContext_team", set.Policies[0].Variables[0].Name)
		assert.Equal(t, `"`+value+`"`, set.Policies[0].Variables[0].Expression)
		res := admit(set)
		assert.Equal(t, !denied, res.Allowed(), value)
		if denied {
			assert.Equal(t, []string{"[r.rule] team blocked may not deploy"}, res.Denials())
		}
	}
	// A list, as a list query gives it: AnyIn reads its elements.
	res := admit(compile(map[string]any{"team": []any{"search", "unassigned"}}))
	assert.False(t, res.Allowed())

	set := compile(map[string]any{"team": "{{ request.namespace }}"})
	require.Len(t, set.Skipped, 1)
	assert.Equal(t, "the test's values give the apiCall entry team a value holding {{, which Kyverno keeps as text and admitc would substitute: write the value without {{", set.Skipped[0].Reason)

	set = compile(map[string]any{"other": "x"})
	require.Len(t, set.Skipped, 1)
	assert.Equal(t, "context.apiCall", set.Skipped[0].Feature)
	assert.Contains(t, set.Skipped[0].Reason, "admitc verify reads the entry from a Kyverno test's values")
}
