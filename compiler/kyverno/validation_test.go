package kyverno_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/admitc/admitc/compiler"
)

// A policy Kyverno's own policy validation refuses (its webhook does not
// admit it; kyverno test skips it as invalid) is refused with Kyverno's
// error, at the field; the same policy written as Kyverno accepts it
// compiles.
func TestKyvernoRefusesThePolicy(t *testing.T) {
	const subjects = `    exclude:
      any:
      - subjects:
        - {kind: Group, name: admins}
`
	const deny = `    validate:
      failureAction: Enforce
      message: %s
      foreach:
      - list: request.object.spec.containers
        deny: {conditions: {any: [{key: "{{ element.image }}", operator: Equals, value: "*:latest"}]}}
`
	cases := map[string]struct{ spec, want string }{
		"element in a foreach rule's message": {"  rules:\n  - name: rule\n    match: {any: [{resources: {kinds: [Pod]}}]}\n" +
			fmt.Sprintf(deny, `"{{ element.name }} uses latest"`),
			`p.yaml:13:16: spec.rules[0].validate.message: Kyverno refuses this policy: variable 'element.name' present outside of foreach at path /validate/message`},
		"elementIndex in the rule's preconditions": {"  rules:\n  - name: rule\n    match: {any: [{resources: {kinds: [Pod]}}]}\n" +
			"    preconditions: {any: [{key: \"{{elementIndex}}\", operator: Equals, value: 0}]}\n" + fmt.Sprintf(deny, "latest"),
			`p.yaml:11:33: spec.rules[0].preconditions.any[0].key: Kyverno refuses this policy: variable 'elementIndex' present outside of foreach at path /preconditions/any/0/key`},
		"subjects in background mode": {"  rules:\n  - name: rule\n    match: {any: [{resources: {kinds: [Pod]}}]}\n" + subjects + fmt.Sprintf(deny, "latest"),
			`p.yaml:14:9: spec.rules[0].exclude.any[0].subjects: Kyverno refuses this policy: only select variables are allowed in background mode. Set spec.background=false to disable background mode for this policy rule: invalid variable used at path: spec/rules[0]/exclude/any[0]/subjects`},
		"context with validate.cel": {"  rules:\n  - name: rule\n    match: {any: [{resources: {kinds: [Pod]}}]}\n" +
			"    context: [{name: n, variable: {value: 1}}]\n    validate: {cel: {expressions: [{expression: \"true\"}]}}\n",
			`p.yaml:11:14: spec.rules[0].context: Kyverno refuses this policy: path: spec.rules[0]: context variables are not supported for CEL expressions in validate rules`},
		"a context entry named like a Kyverno variable": {"  rules:\n  - name: rule\n    match: {any: [{resources: {kinds: [Pod]}}]}\n" +
			"    context: [{name: images.mine, variable: {value: 1}}]\n" + fmt.Sprintf(deny, "latest"),
			`p.yaml:11:22: spec.rules[0].context[0].name: Kyverno refuses this policy: path: spec.rules[0]: entry name images.mine is invalid as it conflicts with a pre-defined variable images`},
		"a context variable with a default and no jmesPath": {"  rules:\n  - name: rule\n    match: {any: [{resources: {kinds: [Pod]}}]}\n" +
			"    context: [{name: n, variable: {value: 1, default: 2}}]\n" + fmt.Sprintf(deny, "latest"),
			`p.yaml:11:55: spec.rules[0].context[0].variable.default: Kyverno refuses this policy: path: spec.rules[0]: a variable must define a default value only when a jmesPath expression is defined`},
		"a context variable with neither value nor jmesPath": {"  rules:\n  - name: rule\n    match: {any: [{resources: {kinds: [Pod]}}]}\n" +
			"    context: [{name: n, variable: {}}]\n" + fmt.Sprintf(deny, "latest"),
			`p.yaml:11:35: spec.rules[0].context[0].variable: Kyverno refuses this policy: path: spec.rules[0]: a variable must define a value or a jmesPath expression`},
		"a context variable whose jmesPath does not parse": {"  rules:\n  - name: rule\n    match: {any: [{resources: {kinds: [Pod]}}]}\n" +
			"    context: [{name: n, variable: {jmesPath: 'a[?'}}]\n" + fmt.Sprintf(deny, "latest"),
			`p.yaml:11:46: spec.rules[0].context[0].variable.jmesPath: Kyverno refuses this policy: path: spec.rules[0]: failed to parse JMESPath a[?: SyntaxError: Incomplete expression`},
		"context variables": {"  rules:\n  - name: rule\n    match: {any: [{resources: {kinds: [Pod]}}]}\n" +
			"    context: [{name: n, variable: {jmesPath: request.object.metadata.name, default: x}}]\n" + fmt.Sprintf(deny, `"{{ n }} uses latest"`), ""},
		"subjects without background mode": {"  background: false\n  rules:\n  - name: rule\n    match: {any: [{resources: {kinds: [Pod]}}]}\n" + subjects + fmt.Sprintf(deny, "latest"), ""},
		"element variables inside foreach": {"  rules:\n  - name: rule\n    match: {any: [{resources: {kinds: [Pod]}}]}\n" + fmt.Sprintf(deny, `"{{ request.object.metadata.name }} uses latest"`), ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: p\n  annotations:\n    pod-policies.kyverno.io/autogen-controllers: none\nspec:\n" + tc.spec
			set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{})
			if tc.want == "" {
				assert.Empty(t, diags)
				assert.Len(t, set.Policies, 1)
				return
			}
			if assert.Len(t, diags, 1) {
				o := diags[0].Origin
				assert.Equal(t, tc.want, fmt.Sprintf("%s:%d:%d: %s: %s", o.File, o.Line, o.Column, o.Path, diags[0].Message))
			}
		})
	}
}
