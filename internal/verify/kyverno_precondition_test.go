package verify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A precondition Kyverno fails to evaluate (a key missing from the object)
// is the rule's error, whatever the failurePolicy; with Ignore the policy's
// match condition error only hides the rule from the webhook's decision,
// so verify reports error, not skip. A precondition that is false is skip.
func TestPreconditionErrorUnderIgnoreIsAnError(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"policy.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: big-deployments-need-owner
spec:
  failurePolicy: Ignore
  rules:
  - name: owner-label
    match:
      any:
      - resources:
          kinds: [Deployment]
    preconditions:
      all:
      - key: "{{ request.object.spec.replicas }}"
        operator: GreaterThanOrEquals
        value: 5
    validate:
      failureAction: Enforce
      message: Deployments with 5 or more replicas need an owner label.
      pattern:
        metadata:
          labels:
            owner: "?*"
`,
		"resources.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: no-replicas}
spec:
  template: {spec: {containers: [{name: a, image: "a:1"}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: small}
spec:
  replicas: 2
  template: {spec: {containers: [{name: a, image: "a:1"}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: big}
spec:
  replicas: 6
  template: {spec: {containers: [{name: a, image: "a:1"}]}}
`,
		"kyverno-test.yaml": `apiVersion: cli.kyverno.io/v1alpha1
kind: Test
metadata: {name: owner}
policies: [policy.yaml]
resources: [resources.yaml]
results:
- {policy: big-deployments-need-owner, rule: owner-label, kind: Deployment, resources: [no-replicas], result: error}
- {policy: big-deployments-need-owner, rule: owner-label, kind: Deployment, resources: [small], result: skip}
- {policy: big-deployments-need-owner, rule: owner-label, kind: Deployment, resources: [big], result: fail}
`,
	}
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600))
	}
	rep, err := Run(context.Background(), []string{dir}, Options{Formats: []Format{Kyverno{}}})
	require.NoError(t, err)
	require.Len(t, rep.Results, 3)
	got := map[string]string{}
	for _, r := range rep.Results {
		assert.Equal(t, Passed, r.Outcome, "%s: got %s", r.Case, r.Got)
		got[r.Case] = r.Got
	}
	assert.True(t, strings.HasPrefix(got["Deployment/default/no-replicas"], "error: failed to evaluate preconditions: "), got["Deployment/default/no-replicas"])
	assert.Equal(t, "skip: celPreconditions or matchConditions not met", got["Deployment/default/small"])
	assert.True(t, strings.HasPrefix(got["Deployment/default/big"], "fail: "), got["Deployment/default/big"])
}
