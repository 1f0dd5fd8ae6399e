package kyverno_test

import (
	"context"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
