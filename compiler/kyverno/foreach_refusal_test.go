package kyverno_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/runtime"
)

// podRule is a ClusterPolicy r with one Pod rule (named rule, no
// autogen) whose fields after match are body (YAML, indented for the
// rule's fields).
func podRule(body string) string {
	return `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: r
  annotations:
    pod-policies.kyverno.io/autogen-controllers: none
spec:
  rules:
  - name: rule
    match:
      any:
      - resources:
          kinds: [Pod]
` + body
}

// foreachRule is a ClusterPolicy with one Pod rule whose validate block is
// the given YAML (indented for the rule's validate field).
func foreachRule(validate string) string {
	return podRule("    validate:\n      failureAction: Enforce\n" + validate)
}

// Each construct a foreach rule cannot be translated with is refused at
// its place, with the reason.
func TestForEachRefusalsNameTheConstruct(t *testing.T) {
	cases := map[string]struct{ validate, want string }{
		"context in an entry": {`      foreach:
      - list: request.object.spec.containers
        context:
        - name: x
          variable: {value: 1}
        deny: {conditions: {any: [{key: a, operator: Equals, value: a}]}}
`, `p.yaml:19:9: spec.rules[0].validate.foreach[0].context: context.variable: a foreach entry's context is loaded by Kyverno at admission for each element; an admission policy cannot load it: move the entry to the rule's context if it does not read the element, or keep this rule under Kyverno`},
		"function in a list": {`      foreach:
      - list: request.object.spec.containers[?starts_with(name, 'a')]
        deny: {conditions: {any: [{key: a, operator: Equals, value: a}]}}
`, `p.yaml:17:15: spec.rules[0].validate.foreach[0].list: validate.foreach list: JMESPath "request.object.spec.containers[?starts_with(name, 'a')]": function starts_with() is not translated where Kyverno handles an evaluation error itself (a foreach list or precondition skips the entry or the element; a context variable with a default takes the default), and a function's error is one CEL cannot catch; compute it in the rule's deny conditions or a context variable without a default, or keep the rule under Kyverno`},
		"function in a precondition": {`      foreach:
      - list: request.object.spec.containers
        preconditions:
          any:
          - key: "{{ length(element.ports) }}"
            operator: GreaterThan
            value: 0
        deny: {conditions: {any: [{key: a, operator: Equals, value: a}]}}
`, `p.yaml:20:18: spec.rules[0].validate.foreach[0].preconditions.any[0].key: foreach preconditions: JMESPath "length(element.ports)": function length() is not translated where Kyverno handles an evaluation error itself (a foreach list or precondition skips the entry or the element; a context variable with a default takes the default), and a function's error is one CEL cannot catch; compute it in the rule's deny conditions or a context variable without a default, or keep the rule under Kyverno`},
		"message variables with a nested foreach": {`      message: "{{ request.object.metadata.name }} is wrong"
      foreach:
      - list: request.object.spec.containers
        foreach:
        - list: element.ports
          pattern: {containerPort: ">0"}
`, `p.yaml:16:16: spec.rules[0].validate.message: validate.message variables: {{ }} variables in the message of a rule with a nested foreach are not translated: write the message without them, or keep this rule under Kyverno`},
		"message reference": {`      message: "hostNetwork is $(./../spec/hostNetwork)"
      foreach:
      - list: request.object.spec.containers
        pattern: {name: "*"}
`, `p.yaml:16:16: spec.rules[0].validate.message: validate.message references: $( ) references in a foreach rule's message are not translated: Kyverno resolves them against the message string itself, where no path resolves, and its element messages then differ; write the message without them`},
		"nested variable in a foreach precondition's function": {`      foreach:
      - list: request.object.spec.containers
        preconditions: {any: [{key: "{{ starts_with('{{element.name}}', 'x') }}", operator: Equals, value: true}]}
        deny: {conditions: {any: [{key: "{{ element.name }}", operator: Equals, value: x}]}}
`, `p.yaml:18:37: spec.rules[0].validate.foreach[0].preconditions.any[0].key: foreach preconditions: JMESPath "starts_with('{{element.name}}', 'x')": function starts_with() is not translated where Kyverno handles an evaluation error itself (a foreach list or precondition skips the entry or the element; a context variable with a default takes the default), and a function's error is one CEL cannot catch; compute it in the rule's deny conditions or a context variable without a default, or keep the rule under Kyverno`},
		"condition messages beside a rule message with variables": {`      message: "{{ request.object.metadata.name }} is wrong"
      foreach:
      - list: request.object.spec.containers
        deny: {conditions: {any: [{key: "{{ element.name }}", operator: Equals, value: x, message: "named x"}]}}
`, `p.yaml:19:28: spec.rules[0].validate.foreach[0].deny.conditions: condition message: condition messages in a foreach deny whose rule message has {{ }} variables are not translated: drop one of them, or keep this rule under Kyverno`},
		"variables in a foreach deny's condition message": {`      foreach:
      - list: request.object.spec.containers
        deny: {conditions: {any: [{key: "{{ element.name }}", operator: Equals, value: x, message: "{{ element.image }}"}]}}
`, `p.yaml:18:28: spec.rules[0].validate.foreach[0].deny.conditions: condition message: {{ }} variables in the condition messages of a foreach deny are not translated: move them to validate.message, or keep this rule under Kyverno`},
		"different any messages and variables": {`      message: "{{ request.object.metadata.name }} is wrong"
      deny:
        conditions:
          any:
          - {key: "{{ request.object.spec.hostPID || ` + "`false`" + ` }}", operator: Equals, value: true, message: hostPID}
          - {key: "{{ request.object.spec.hostIPC || ` + "`false`" + ` }}", operator: Equals, value: true, message: hostIPC}
`, `p.yaml:19:11: spec.rules[0].validate.deny.conditions: condition message: the any conditions carry different messages and the rule's message has {{ }} variables: which message Kyverno substitutes depends on the condition that holds; this is not translated: give the conditions one message, or split the rule, one condition each`},
		"variables in a pattern key": {`      foreach:
      - list: request.object.spec.containers
        pattern: {securityContext: {"{{ element.name }}": "?*"}}
`, `p.yaml:18:36: spec.rules[0].validate.foreach[0].pattern.securityContext: validate.pattern construct: variables in pattern keys are not translated; rewrite the pattern without it (or the check as validate.cel), or keep this rule under Kyverno`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(foreachRule(tc.validate))}}, compiler.Options{KeepGoing: true})
			require.Empty(t, diags)
			require.Len(t, set.Skipped, 1)
			sk := set.Skipped[0]
			assert.Equal(t, tc.want, fmt.Sprintf("%s:%d:%d: %s: %s: %s", sk.Origin.File, sk.Origin.Line, sk.Origin.Column, sk.Origin.Path, sk.Feature, sk.Reason))
			assert.Empty(t, set.Policies)
		})
	}
}

// A pattern rule's message with {{ }} variables is substituted from the
// request, in buildErrorMessage's shape; a variable that does not resolve
// leaves the static fallback and the failure.
func TestPatternMessageVariables(t *testing.T) {
	src := foreachRule(`      message: "{{ request.object.metadata.labels.team }} may not use the host network"
      pattern:
        spec:
          =(hostNetwork): false
`)
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{})
	require.Empty(t, diags)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	for labels, want := range map[string]string{
		"{team: web}": "[r.rule] validation error: web may not use the host network. rule rule failed at path /spec/hostNetwork/",
		"{}":          "[r.rule] validation error: variables substitution error in rule rule",
	} {
		p := pod(t, `{hostNetwork: true, containers: [{name: a, image: "a:1"}]}`)
		p.Object["metadata"].(map[string]any)["labels"] = map[string]any{}
		if labels != "{}" {
			p.Object["metadata"].(map[string]any)["labels"] = map[string]any{"team": "web"}
		}
		res, err := e.Admit(context.Background(), runtime.RequestFor(p, nil, "default"))
		require.NoError(t, err)
		assert.Equal(t, []string{want}, res.Denials(), labels)
	}
}
