package kyverno_test

import (
	"context"
	"os"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/runtime"
)

const foreachPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: fe
  annotations:
    pod-policies.kyverno.io/autogen-controllers: none
spec:
  rules:
  - name: tags
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      failureAction: Enforce
      message: "pod {{ request.object.metadata.name }} runs a latest image as {{ request.object.spec.serviceAccountName }}"
      foreach:
      - list: request.object.spec.containers
        deny:
          conditions:
            any:
            - key: "{{ element.image }}"
              operator: Equals
              value: "*:latest"
  - name: scoped
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      failureAction: Enforce
      foreach:
      - list: request.object.spec.containers[].image
        elementScope: true
        pattern:
          name: "*"
  - name: pull
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      failureAction: Enforce
      message: pull latest images always
      foreach:
      - list: request.object.spec.containers
        preconditions:
          all:
          - key: "{{ element.image }}"
            operator: Equals
            value: "*:latest"
        pattern:
          imagePullPolicy: Always
`

// What foreach rules decide, as Kyverno's validateForEach does: the
// first element that fails or errs decides, in order; an element whose
// preconditions do not hold or do not resolve is skipped; a list that does
// not resolve, or no element validated, gives no response; elementScope
// true on an element that is not a map is an error.
func TestForEachRuleDecisions(t *testing.T) {
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(foreachPolicy)}}, compiler.Options{})
	require.Empty(t, diags)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	cases := map[string]struct {
		spec    string
		denials []string
		none    []string
	}{
		"all good": {`{containers: [{name: a, image: "a:1", imagePullPolicy: Always}]}`, []string{
			"[fe.scoped] expression 'variables.kyvernoOutcome == 'error' ? {}['validation failure: ' + variables.kyvernoForEach.split('\\t', 4)[3]] : variables.kyvernoOutcome != 'fail'' resulted in error: no such key: validation failure: failed to process foreach: cannot use elementScope=true foreach rules for elements that are not maps, expected type=map got type=string",
		}, []string{"pull"}},
		"no containers": {`{}`, nil, []string{"pull", "scoped", "tags"}},
		"latest second": {`{serviceAccountName: sa, containers: [{name: a, image: "a:1"}, {name: b, image: "b:latest", imagePullPolicy: Always}]}`, []string{
			"[fe.scoped] expression 'variables.kyvernoOutcome == 'error' ? {}['validation failure: ' + variables.kyvernoForEach.split('\\t', 4)[3]] : variables.kyvernoOutcome != 'fail'' resulted in error: no such key: validation failure: failed to process foreach: cannot use elementScope=true foreach rules for elements that are not maps, expected type=map got type=string",
			"[fe.tags] validation failure: pod p runs a latest image as sa",
		}, nil},
		"fail before an error": {`{serviceAccountName: sa, containers: [{name: a, image: "a:latest"}, {name: b}]}`, []string{
			"[fe.pull] validation failure: validation error: pull latest images always. rule pull failed at path /imagePullPolicy/",
			"[fe.scoped] expression 'variables.kyvernoOutcome == 'error' ? {}['validation failure: ' + variables.kyvernoForEach.split('\\t', 4)[3]] : variables.kyvernoOutcome != 'fail'' resulted in error: no such key: validation failure: failed to process foreach: cannot use elementScope=true foreach rules for elements that are not maps, expected type=map got type=string",
			"[fe.tags] validation failure: pod p runs a latest image as sa",
		}, nil},
		"error before a fail": {`{containers: [{name: b}, {name: a, image: "a:latest", imagePullPolicy: Always}]}`, []string{
			"[fe.scoped] expression 'variables.kyvernoOutcome == 'error' ? {}['validation failure: ' + variables.kyvernoForEach.split('\\t', 4)[3]] : variables.kyvernoOutcome != 'fail'' resulted in error: no such key: validation failure: failed to process foreach: cannot use elementScope=true foreach rules for elements that are not maps, expected type=map got type=string",
			"[fe.tags] expression 'variables.kyvernoOutcome == 'error' ? {}['validation failure: ' + variables.kyvernoForEach.split('\\t', 4)[3]] : variables.kyvernoOutcome != 'fail'' resulted in error: composited variable \"kyvernoOutcome\" fails to evaluate: composited variable \"kyvernoForEach\" fails to evaluate: composited variable \"kyvernoEntry0\" fails to evaluate: no such key: image",
			"[fe.tags] expression 'variables.kyvernoOutcome == 'skip' ? 'the old object violates the rule too (allowExistingViolations)' : ''' resulted in error: composited variable \"kyvernoOutcome\" fails to evaluate: composited variable \"kyvernoForEach\" fails to evaluate: composited variable \"kyvernoEntry0\" fails to evaluate: no such key: image",
			"[fe.tags] expression 'variables.kyvernoOutcome == 'none' ? 'no element of the foreach lists was validated' : ''' resulted in error: composited variable \"kyvernoOutcome\" fails to evaluate: composited variable \"kyvernoForEach\" fails to evaluate: composited variable \"kyvernoEntry0\" fails to evaluate: no such key: image",
		}, nil},
		"message variable missing": {`{containers: [{image: "a:latest", imagePullPolicy: Always}]}`, []string{
			"[fe.scoped] expression 'variables.kyvernoOutcome == 'error' ? {}['validation failure: ' + variables.kyvernoForEach.split('\\t', 4)[3]] : variables.kyvernoOutcome != 'fail'' resulted in error: no such key: validation failure: failed to process foreach: cannot use elementScope=true foreach rules for elements that are not maps, expected type=map got type=string",
			"[fe.tags] validation failure:",
		}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := pod(t, tc.spec)
			// Offline, as admitc test and verify ask: no response is
			// Kyverno's notion, not the API server's.
			req := runtime.RequestFor(p, nil, "default")
			req.Offline = true
			res, err := e.Admit(context.Background(), req)
			require.NoError(t, err)
			denials := res.Denials()
			sort.Strings(denials)
			sort.Strings(tc.denials)
			assert.Equal(t, tc.denials, denials)
			var none []string
			for _, rule := range []string{"pull", "scoped", "tags"} {
				if _, ok := res.AuditAnnotations["fe."+rule+"."+kyverno.NoResponseAnnotation]; ok {
					none = append(none, rule)
				}
			}
			sort.Strings(none)
			assert.Equal(t, tc.none, none)
		})
	}
}

// A nested foreach whose deny condition reads {{ element.path }} without a
// default errs on a path that has none, and Kyverno's first element that
// does not pass says whether the rule fails or errs. The typed translation
// lists the elements that do not pass in order (failures, and oldFailures
// on the old object) and decides by the first: an error before a failure
// errs, a failure before an error fails, and on an UPDATE only an old
// object that fails (not one that errs) lets the new one's failure pass.
// The error is Kyverno's, word for word.
func TestForEachElementsThatErrAreTypedInKyvernosOrder(t *testing.T) {
	path := "../../examples/kyverno-pattern/restrict-ingress-paths-foreach/policy.yaml"
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	set, diags := compiler.Compile([]compiler.Source{{Name: path, Data: data}}, compiler.Options{})
	require.Empty(t, diags.Error())
	require.Len(t, set.Policies, 1)
	p := set.Policies[0]
	require.NotNil(t, p.Dynamic, "typed, with the exact form kept")
	var names []string
	for _, v := range p.Variables {
		names = append(names, v.Name)
	}
	assert.Equal(t, []string{kyverno.FailuresVariable, kyverno.OldFailuresVariable}, names)
	assert.Contains(t, p.Variables[0].Expression, `rule.http.paths.map(path, !has(path.path) ? ["validation failure: validation failure: failed to check deny conditions: `)
	assert.Contains(t, p.Variables[1].Expression, `rule.http.paths.map(path, !has(path.path) ? ["error"] : (`)
	assert.Less(t, len(p.Validations[0].Expression)+len(p.Variables[0].Expression)+len(p.Variables[1].Expression), 2000)

	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	ingress := func(paths ...string) *unstructured.Unstructured {
		var rules []any
		for _, p := range paths {
			path := map[string]any{"pathType": "ImplementationSpecific", "backend": map[string]any{"service": map[string]any{"name": "s", "port": map[string]any{"number": int64(80)}}}}
			if p != "" {
				path["path"] = p
			}
			rules = append(rules, map[string]any{"http": map[string]any{"paths": []any{path}}})
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
			"metadata": map[string]any{"name": "i", "namespace": "default"},
			"spec":     map[string]any{"rules": rules},
		}}
	}
	const (
		denied = "[restrict-ingress-paths-foreach.check-paths] validation failure: validation failure: spec.rules[].http.paths[].path value is not allowed"
		errs   = `no such key: validation failure: validation failure: failed to check deny conditions: failed to substitute variables in condition key: failed to resolve element.path at path : JMESPath query failed: Unknown key "path" in path`
	)
	cases := map[string]struct {
		object, old *unstructured.Unstructured
		want        string // "" admitted, else a denial's text it holds
	}{
		"good":                        {object: ingress("/", "/api")},
		"bad":                         {object: ingress("/", "/etc/passwd"), want: denied},
		"missing path":                {object: ingress("/", ""), want: errs},
		"error before a failure":      {object: ingress("", "/root"), want: errs},
		"failure before an error":     {object: ingress("/root", ""), want: denied},
		"update, old fails too":       {object: ingress("/root"), old: ingress("/etc/x"), want: ""},
		"update, old errs":            {object: ingress("/root"), old: ingress(""), want: denied},
		"update, old good":            {object: ingress("/root"), old: ingress("/"), want: denied},
		"update, new errs, old fails": {object: ingress(""), old: ingress("/root"), want: errs},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := e.Admit(context.Background(), runtime.RequestFor(tc.object, tc.old, "default"))
			require.NoError(t, err)
			denials := res.Denials()
			if tc.want == "" {
				assert.Empty(t, denials)
				return
			}
			require.Len(t, denials, 1)
			assert.Contains(t, denials[0], tc.want)
		})
	}
}
