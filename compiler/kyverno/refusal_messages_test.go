package kyverno_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/compiler/source"
)

// internalName matches what admitc names its own generated CEL and
// translation by, which a policy's author never wrote: the placeholders of
// nested {{ }} variables, and the kyverno* variables of the emitted
// policies.
var internalName = regexp.MustCompile(`__admitc|\bkyverno(Entry|List|Element|Elements|Outcome|Deny|DenyBefore|Context_|ForEach|Pattern|PatternBefore|PodSecurity|PatchWalk|Images|Index|Applied|Obj|Text|Path|At|Kinds|Decides|Refusal)|\bctxsub[0-9]|\bvariables\.kyverno`)

// refusalRoots hold the repository's Kyverno policies, among them those
// admitc refuses in whole or in part: the CLI's and verify's fixtures, the
// examples and the golden corpus.
var refusalRoots = []string{"../../internal/cli/testdata", "../../internal/verify/testdata", "../../examples", "../../golden"}

// Every refusal of a Kyverno policy in the repository's fixtures says why,
// in the policy's terms: a feature and a reason, never empty, and never
// one of admitc's internal names.
func TestRefusalsNameNothingInternal(t *testing.T) {
	refusals := 0
	for _, root := range refusalRoots {
		require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !isPolicyFile(path) {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil || !strings.Contains(string(data), "kyverno.io") {
				return err
			}
			for _, r := range readRefusals(t, path, data) {
				refusals++
				assertUserFacing(t, r)
			}
			return nil
		}))
	}
	for _, tc := range worstRefusals {
		for _, r := range refusalsOf("p.yaml", []byte(tc.policy)) {
			refusals++
			assertUserFacing(t, r)
		}
	}
	t.Logf("%d refusals checked", refusals)
	assert.Greater(t, refusals, 10, "the fixtures hold refusals")
}

// The refusals the Kyverno frontend's tests expect, written in full in
// their tables, name nothing internal either.
func TestExpectedRefusalsNameNothingInternal(t *testing.T) {
	literal := regexp.MustCompile("`[^`]*`|\"(?:[^\"\\\\\\n]|\\\\.)*\"")
	checked := 0
	for _, dir := range []string{".", "conditions", "mutate", "pattern", "podsecurity", "../../internal/migrate", "../../backends/kyverno"} {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		require.NoError(t, err)
		for _, f := range files {
			if filepath.Base(f) == "refusal_messages_test.go" {
				continue
			}
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, lit := range literal.FindAllString(string(src), -1) {
				if !strings.Contains(lit, "not translated") && !strings.Contains(lit, "JMESPath") && !strings.Contains(lit, "under Kyverno") {
					continue
				}
				checked++
				assert.NotRegexp(t, internalName, lit, "%s: an expected refusal names admitc's internals", f)
			}
		}
	}
	t.Logf("%d expected refusals checked", checked)
	assert.Greater(t, checked, 50)
}

// worstRefusals are refusals whose reasons once named admitc's internals or
// left the author nothing to do, with the full message each gives now.
var worstRefusals = map[string]struct{ policy, want string }{
	"a context entry the rule does not declare, read through a nested variable": {
		contextRule("    - {name: podpriorities, configMap: {name: allowed-pod-priorities, namespace: default}}\n", denyOn(`"{{ podprioritydict.data.\"{{request.object.metadata.namespace}}\" }}"`)),
		`p.yaml:23:20: spec.rules[0].validate.deny.conditions.any[0].value: validate.deny: JMESPath "podprioritydict.data.\"{{request.object.metadata.namespace}}\"": ` +
			`podprioritydict is neither declared in the rule's context before it is read nor a variable Kyverno provides that admitc translates (request, serviceAccountName, serviceAccountNamespace, images; element, elementIndex, elementN and elementIndexN inside a foreach): ` +
			`declare podprioritydict in the rule's context, before the entries that read it, or correct the name`},
	"a nested variable in a JSON literal": {
		podRule(denyBody("'{{ contains(`[\"{{ request.namespace }}\"]`, ''x'') }}'", "false")),
		`p.yaml:19:18: spec.rules[0].validate.deny.conditions.any[0].key: validate.deny: JMESPath "contains(` + "`" + `[\"{{ request.namespace }}\"]` + "`" + `, 'x')": ` +
			`a {{ }} variable inside another is translated only where it names a field (a."{{ x }}") or stands in a raw string ('{{ x }}'); write the query without it, or keep the rule under Kyverno`},
	"a field of the request admitc does not translate": {
		podRule(denyBody(`"{{ request.kind.kind }}"`, "Pod")),
		`p.yaml:19:18: spec.rules[0].validate.deny.conditions.any[0].key: validate.deny: JMESPath "request.kind.kind": ` +
			`request.kind is a field of Kyverno's admission request that admitc does not translate (it translates request.object, request.oldObject, request.operation, request.namespace, request.name, request.userInfo.username and request.userInfo.groups); read what the rule needs from those, or keep the rule under Kyverno`},
	"a configMap entry in a rule with an exclude": {
		strings.Replace(contextRule(cmEntry, denyOn(`"{{ cm.data.names }}"`)), "    context:", "    exclude:\n      any:\n      - resources:\n          namespaces: [kube-system]\n    context:", 1),
		`p.yaml:19:7: spec.rules[0].context[0]: context.configMap: spec.rules[0].exclude needs a match condition (a binding cannot say it), and the API server looks up the paramRef (ConfigMap n/c) before it evaluates anything else of the policy: ` +
			`where the ConfigMap is missing, requests the rule does not match would fail too. admitc translates a configMap entry when the rule's kinds (and operations) alone scope it: one match filter, no exclude, names, namespaces or selectors, in a ClusterPolicy; scope the rule so, or keep it under Kyverno`},
	"a configMap entry in a rule matching names": {
		strings.Replace(contextRule(cmEntry, denyOn(`"{{ cm.data.names }}"`)), "kinds: [Pod]", "kinds: [Pod]\n          names: [web-*]", 1),
		`p.yaml:16:7: spec.rules[0].context[0]: context.configMap: spec.rules[0].match.any[0].resources.names needs a match condition (a binding cannot say it), and the API server looks up the paramRef (ConfigMap n/c) before it evaluates anything else of the policy: ` +
			`where the ConfigMap is missing, requests the rule does not match would fail too. admitc translates a configMap entry when the rule's kinds (and operations) alone scope it: one match filter, no exclude, names, namespaces or selectors, in a ClusterPolicy; scope the rule so, or keep it under Kyverno`},
	"a configMap entry in a rule with celPreconditions": {
		contextRule(cmEntry, "    celPreconditions:\n    - {name: labelled, expression: \"has(object.metadata.labels)\"}\n"+denyOn(`"{{ cm.data.names }}"`)),
		`p.yaml:15:7: spec.rules[0].context[0]: context.configMap: spec.rules[0].celPreconditions can skip the rule before Kyverno loads the ConfigMap, while the API server looks up the paramRef (ConfigMap n/c) before it evaluates anything else of the policy: ` +
			`where the ConfigMap is missing, requests Kyverno skips would fail. admitc translates a configMap entry when Kyverno reads it on every request the rule matches: drop the celPreconditions or make the first condition read "cm", or keep the rule under Kyverno`},
	"a configMap entry read after a condition that can decide": {
		contextRule(cmEntry, denyCMLate),
		`p.yaml:15:7: spec.rules[0].context[0]: context.configMap: spec.rules[0].validate.deny.conditions.any[0], the first condition or pattern Kyverno evaluates, does not read "cm", so the rule can finish without loading the ConfigMap, while the API server looks up the paramRef (ConfigMap n/c) before it evaluates anything else of the policy: ` +
			`where the ConfigMap is missing, requests Kyverno admits would fail. Put a condition that reads "cm" first, or keep the rule under Kyverno`},
}

const cmEntry = "    - {name: cm, configMap: {name: c, namespace: n}}\n"

// denyOn is an Enforce deny rule: the pod's name in value.
func denyOn(value string) string {
	return "    validate:\n      failureAction: Enforce\n      deny:\n        conditions:\n          any:\n          - key: \"{{ request.object.metadata.name }}\"\n            operator: AnyIn\n            value: " + value + "\n"
}

// denyBody is an Enforce deny rule with one condition, key Equals value.
func denyBody(key, value string) string {
	return "    validate:\n      failureAction: Enforce\n      deny:\n        conditions:\n          any:\n          - key: " + key + "\n            operator: Equals\n            value: " + value + "\n"
}

// The worst refusals say what in the policy is the problem, as written,
// and what its author can do.
func TestRefusalsSayWhatAndWhatToDo(t *testing.T) {
	for name, tc := range worstRefusals {
		t.Run(name, func(t *testing.T) {
			got := refusalsOf("p.yaml", []byte(tc.policy))
			require.Len(t, got, 1)
			assert.Equal(t, tc.want, got[0])
		})
	}
}

// refusalsOf compiles a policy file, keeping going, and renders what it
// refuses as file:line:col: path: feature: reason; a file that does not
// compile at all gives its diagnostics.
func refusalsOf(name string, data []byte) []string {
	set, diags := compiler.Compile([]compiler.Source{{Name: name, Data: data}}, compiler.Options{KeepGoing: true})
	var out []string
	for _, d := range diags {
		out = append(out, d.String())
	}
	if set == nil {
		return out
	}
	for _, sk := range set.Skipped {
		out = append(out, fmt.Sprintf("%s:%d:%d: %s: %s: %s", sk.Origin.File, sk.Origin.Line, sk.Origin.Column, sk.Origin.Path, sk.Feature, sk.Reason))
	}
	return out
}

// readRefusals reads every Kyverno document of a YAML file with the
// frontend alone (no CEL type checking, which takes minutes on the
// examples) and renders its refusals and errors as refusalsOf does.
func readRefusals(t *testing.T, path string, data []byte) []string {
	var out []string
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return out
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		d := &source.Doc{File: path, Root: doc.Content[0]}
		if _, kyvernoKind := kyvernoGroups[groupOf(d.Field("apiVersion"))]; !kyvernoKind {
			continue
		}
		res, diags := kyverno.Read(d, kyverno.Options{})
		for _, dg := range diags {
			out = append(out, dg.String())
		}
		if res == nil {
			continue
		}
		for _, sk := range res.Skipped {
			out = append(out, fmt.Sprintf("%s:%d:%d: %s: %s: %s", sk.Origin.File, sk.Origin.Line, sk.Origin.Column, sk.Origin.Path, sk.Feature, sk.Reason))
		}
	}
}

var kyvernoGroups = map[string]bool{kyverno.Group: true, kyverno.PoliciesGroup: true}

func groupOf(apiVersion string) string {
	group, _, _ := strings.Cut(apiVersion, "/")
	return group
}

// assertUserFacing fails for a refusal with an empty feature or reason, or
// one that names admitc's internals.
func assertUserFacing(t *testing.T, refusal string) {
	t.Helper()
	assert.NotRegexp(t, internalName, refusal)
	assert.NotRegexp(t, `: : |: $|:\s*\(`, refusal, "an empty feature or reason")
}

func isPolicyFile(path string) bool {
	ext := filepath.Ext(path)
	return ext == ".yaml" || ext == ".yml"
}
