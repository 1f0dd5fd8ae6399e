package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The silent ways a migration could widen, hide or drop a policy (issue
// 28), each checked through the commands a user runs.

const privilegedClusterPolicy = fixtures + "kyverno-pattern/disallow-privileged-containers/policy.yaml"

// A translated Kyverno policy never judges what a default Kyverno
// installation never sends to it: kube-proxy's privileged pod in
// kube-system is admitted, as under Kyverno, unless --kyverno-filters none.
func TestKyvernoFiltersInTest(t *testing.T) {
	pod := filepath.Join(t.TempDir(), "kube-proxy.yaml")
	require.NoError(t, os.WriteFile(pod, []byte(`apiVersion: v1
kind: Pod
metadata: {name: kube-proxy-x1, namespace: kube-system}
spec:
  containers: [{name: kube-proxy, image: "registry.k8s.io/kube-proxy:v1.36.0", securityContext: {privileged: true}}]
`), 0o644))
	stdout, stderr, code := run(t, "test", "--policies", privilegedClusterPolicy, pod)
	assert.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "ALLOWED Pod kube-system/kube-proxy-x1")

	stdout, _, code = run(t, "test", "--policies", privilegedClusterPolicy, "--kyverno-filters", "none", pod)
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, stdout, "DENIED Pod kube-system/kube-proxy-x1")

	_, stderr, code = run(t, "test", "--policies", privilegedClusterPolicy, "--kyverno-filters", filepath.Join(t.TempDir(), "missing.yaml"), pod)
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "--kyverno-filters: ")
}

// compile writes the filters as binding exclusions, and --namespace
// scopes a Kyverno policy's bindings as it scopes admitc's own (it was
// ignored: the binding had no namespaceSelector); a namespace Kyverno's
// filters leave out is refused rather than silently judged nowhere.
func TestNamespaceScopesKyvernoPolicies(t *testing.T) {
	stdout, stderr, code := run(t, "vap", "--policies", privilegedClusterPolicy, "--namespace", "shop")
	require.Equal(t, ExitOK, code, stderr)
	binding := stdout[strings.Index(stdout, "kind: ValidatingAdmissionPolicyBinding"):]
	assert.Contains(t, binding, `  matchResources:
    namespaceSelector:
      matchExpressions:
      - key: kubernetes.io/metadata.name
        operator: In
        values:
        - shop
  policyName: disallow-privileged-containers.privileged-containers
`)

	stdout, _, code = run(t, "vap", "--policies", privilegedClusterPolicy)
	require.Equal(t, ExitOK, code)
	assert.Contains(t, stdout, `        operator: NotIn
        values:
        - kube-node-lease
        - kube-public
        - kube-system
        - kyverno
`)

	_, stderr, code = run(t, "vap", "--policies", privilegedClusterPolicy, "--namespace", "kube-system")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "--namespace kube-system: Kyverno's resource filters leave that namespace out")

	stdout, _, code = run(t, "vap", "--policies", privilegedClusterPolicy, "--namespace", "kube-system", "--kyverno-filters", "none")
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, stdout, "        - kube-system\n  policyName:")

	out := filepath.Join(t.TempDir(), "migrated")
	_, stderr, code = run(t, "migrate", privilegedClusterPolicy, "--namespace", "shop", "--out", out)
	require.Equal(t, ExitOK, code, stderr)
	for _, f := range []string{"validatingpolicy.yaml", "vap.yaml"} {
		data, err := os.ReadFile(filepath.Join(out, "disallow-privileged-containers", f))
		require.NoError(t, err)
		assert.Contains(t, string(data), "      - key: kubernetes.io/metadata.name\n        operator: In\n        values:\n        - shop\n", f)
	}
}

// migrate says which filters its admission policies apply; the successors
// (enforced by Kyverno, which applies them itself) do not carry them.
func TestMigrateReportsKyvernoFilters(t *testing.T) {
	out := filepath.Join(t.TempDir(), "migrated")
	stdout, stderr, code := run(t, "migrate", privilegedClusterPolicy, "--out", out)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "vap.yaml and map.yaml leave out what Kyverno's filters leave out (Kyverno v1.19 Helm chart defaults (release kyverno in namespace kyverno); --kyverno-filters):\n  namespaces: kube-node-lease, kube-public, kube-system, kyverno\n")
	assert.Contains(t, stdout, "  requesters: groups system:nodes\n")
	vp, err := os.ReadFile(filepath.Join(out, "disallow-privileged-containers", "validatingpolicy.yaml"))
	require.NoError(t, err)
	assert.NotContains(t, string(vp), "kube-system")
	vap, err := os.ReadFile(filepath.Join(out, "disallow-privileged-containers", "vap.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(vap), "- kube-system")

	stdout, _, code = run(t, "migrate", privilegedClusterPolicy, "--kyverno-filters", "none", "--out", filepath.Join(t.TempDir(), "m"))
	require.Equal(t, ExitOK, code)
	assert.Contains(t, stdout, "vap.yaml and map.yaml apply no Kyverno filters (--kyverno-filters none)\n")
}

// A policy whose every rule is refused gets no test (one without results
// would pass), its results are listed as dropped, and its file is counted
// refused, not migrated; verify --strict fails a test without results.
func TestMigrateKeepsRefusedResultsVisible(t *testing.T) {
	out := filepath.Join(t.TempDir(), "migrated")
	stdout, _, code := run(t, "migrate", "testdata/migrate/refused-policy", "--out", out)
	assert.Equal(t, ExitFailed, code)
	assert.NoFileExists(t, filepath.Join(out, "images-run-as-non-root", ".kyverno-test", "kyverno-test.yaml"))
	assert.Contains(t, stdout, "test testdata/migrate/refused-policy/.kyverno-test/kyverno-test.yaml: not migrated: none of its 1 expected results has a migrated policy to answer for it; no test is written (one without results would pass)\n"+
		"  dropped: Pod root-image of policy images-run-as-non-root, rule check-image-user: expected fail; the rule was not migrated (refused), so no policy answers for it\n")
	assert.Contains(t, stdout, "REFUSED file testdata/migrate/refused-policy/policy.yaml: every rule of its policies was refused (1 rules; see why below)\n")
	assert.Contains(t, stdout, "1 rules: 0 translated, 0 translated with a difference, 1 refused\n1 files: 0 migrated, 0 skipped (no policy), 1 refused\n")

	empty := filepath.Join(t.TempDir(), "kyverno-test.yaml")
	require.NoError(t, os.WriteFile(empty, []byte("apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: empty}\npolicies: ["+filepath.Join(mustAbs(t, fixtures), "kyverno/disallow-host-path/policy.yaml")+"]\nresources: []\nresults: []\n"), 0o644))
	stdout, _, code = run(t, "verify", "--strict", empty)
	assert.Equal(t, ExitFailed, code, stdout)
	assert.Contains(t, stdout, "the test has no expected results, so it checks nothing")
	_, _, code = run(t, "verify", empty)
	assert.Equal(t, ExitOK, code, "without --strict it passes, as kyverno test passes it")
}

// Of two resources with the same kind, namespace and name, kyverno test
// judges the first and warns; verify judges the first too, and a pass on
// it is a warning that names the other (a failure under --strict).
func TestVerifyWarnsOnDuplicateResources(t *testing.T) {
	stdout, _, code := run(t, "verify", "testdata/verify/kyverno-duplicates")
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, stdout, "Pod/default/dpod is also defined in testdata/verify/kyverno-duplicates/resources.yaml#2, which is not judged")
	assert.Contains(t, stdout, "1 warning(s)")
	_, _, code = run(t, "verify", "--strict", "testdata/verify/kyverno-duplicates")
	assert.Equal(t, ExitFailed, code)
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}
