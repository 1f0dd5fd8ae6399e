//go:build kyverno

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every validate.cel ClusterPolicy fixture, imported by admitc and run by
// Kyverno's own engine on the original, decides every fixture resource the
// same way. Fixtures whose test needs values or a user (namespace labels,
// an UPDATE, subjects), or objects outside the default namespace, are left
// to admitc verify and kyverno test: the compare harness gives Kyverno's
// engine none of them, and judges every object in one namespace.
func TestCompareKyvernoFixturesAgreeWithKyvernosEngine(t *testing.T) {
	dirs, err := filepath.Glob(fixtures + "kyverno/*/policy.yaml")
	require.NoError(t, err)
	compared := 0
	for _, policy := range dirs {
		dir := filepath.Dir(policy)
		data, err := os.ReadFile(policy)
		require.NoError(t, err)
		test, err := os.ReadFile(filepath.Join(dir, ".kyverno-test", "kyverno-test.yaml"))
		require.NoError(t, err)
		if !strings.Contains(string(data), "kind: ClusterPolicy") || strings.Contains(string(test), "variables:") || strings.Contains(string(test), "userinfo:") ||
			strings.Contains(string(test), "namespace:") || filepath.Base(dir) == "require-labels" || filepath.Base(dir) == "disallow-default-namespace" {
			continue
		}
		compared++
		t.Run(filepath.Base(dir), func(t *testing.T) { assertKyvernoAgrees(t, policy, dir) })
	}
	assert.GreaterOrEqual(t, compared, 15)
}

// Every validate.pattern and anyPattern fixture, imported by admitc and
// run by Kyverno's own engine on the original, decides every fixture
// resource (Pods, Deployments, CronJobs; pass, fail and skip) the same way.
func TestComparePatternFixturesAgreeWithKyvernosEngine(t *testing.T) {
	policies, err := filepath.Glob(fixtures + "kyverno-pattern/*/policy.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(policies), 12)
	rows, denied := 0, 0
	for _, policy := range policies {
		dir := filepath.Dir(policy)
		// The harness judges every object in one namespace (see above):
		// a fixture placing objects in other namespaces is left to verify.
		if res, err := os.ReadFile(filepath.Join(dir, ".kyverno-test", "resources.yaml")); err == nil && strings.Contains(string(res), "namespace:") {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			r, d := assertKyvernoAgrees(t, policy, dir)
			rows, denied = rows+r, denied+d
		})
	}
	t.Logf("%d fixtures, %d resources, %d denied by Kyverno's engine, no disagreement", len(policies), rows, denied)
	assert.Greater(t, denied, 50)
}

// assertKyvernoAgrees runs compare on the fixture's resources with admitc's
// import of policy and Kyverno's engine on the original, and fails on any
// row with a difference or without Kyverno's verdict. It returns how many
// resources were compared and how many Kyverno denied.
func assertKyvernoAgrees(t *testing.T, policy, dir string) (rows, denied int) {
	t.Helper()
	out, stderr, _ := run(t, "compare", "-o", "json", "--policies", policy, "--kyverno-policies", policy,
		filepath.Join(dir, ".kyverno-test", "resources.yaml"))
	var doc struct {
		Rows []struct {
			Name    string `json:"name"`
			Results []struct {
				Engine  string `json:"engine"`
				Verdict string `json:"verdict"`
			} `json:"results"`
			Differences []string `json:"differences"`
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), stderr)
	require.NotEmpty(t, doc.Rows, stderr)
	for _, r := range doc.Rows {
		assert.Empty(t, r.Differences, r.Name)
		kyverno := ""
		for _, e := range r.Results {
			if e.Engine == "kyverno" {
				kyverno = e.Verdict
			}
		}
		assert.NotEmpty(t, kyverno, "%s: no verdict from Kyverno's engine", r.Name)
		if kyverno == "denied" {
			denied++
		}
	}
	return len(doc.Rows), denied
}
