package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMigrateWritesSuccessorsNativeAndTest(t *testing.T) {
	out := filepath.Join(t.TempDir(), "migrated")
	stdout, stderr, code := run(t, "migrate", fixtures+"kyverno/team-a-require-team-label", "--out", out)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "OK        check-team-label -> namespacedvalidatingpolicy.yaml: team-a-require-team-label, autogen-team-a-require-team-label, autogen-cronjob-team-a-require-team-label; "+
		"vap.yaml: team-a.team-a-require-team-label.check-team-label, team-a.team-a-require-team-label.autogen-check-team-label, team-a.team-a-require-team-label.autogen-cronjob-check-team-label\n")
	dir := filepath.Join(out, "team-a.team-a-require-team-label")
	for _, f := range []string{"namespacedvalidatingpolicy.yaml", "vap.yaml", ".kyverno-test/kyverno-test.yaml", ".kyverno-test/resources.yaml"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
	data, err := os.ReadFile(filepath.Join(dir, "namespacedvalidatingpolicy.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "kind: NamespacedValidatingPolicy\nmetadata:\n  labels:\n    app.kubernetes.io/managed-by: admitc\n  name: team-a-require-team-label\n  namespace: team-a\n")

	_, stderr, code = run(t, "verify", out)
	assert.Equal(t, ExitOK, code, stderr)
}

func TestMigrateToStdoutReportsOnStderr(t *testing.T) {
	stdout, stderr, code := run(t, "migrate", fixtures+"kyverno/disallow-host-path/policy.yaml")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "# --- disallow-host-path/validatingpolicy.yaml ---\napiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\n")
	assert.Contains(t, stdout, "# --- disallow-host-path/vap.yaml ---\n")
	assert.Contains(t, stderr, "1 rules: 1 translated, 0 translated with a difference, 0 refused\n")
}

func TestMigrateExitCodes(t *testing.T) {
	_, stderr, code := run(t, "migrate", "testdata/verify/kyverno-unsupported/api-call/policy.yaml", "--out", t.TempDir())
	assert.Equal(t, ExitFailed, code, "a refused rule exits 1")
	assert.Empty(t, stderr)

	_, stderr, code = run(t, "migrate", filepath.Join(t.TempDir(), "missing.yaml"))
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "missing.yaml")

	_, stderr, code = run(t, "migrate", "-o", "yaml", fixtures+"kyverno/disallow-host-path")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "--output must be text or json")
}

func TestMigrateOutKeepsPreviousFilesOnFailure(t *testing.T) {
	out := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(out, "disallow-host-path", "vap.yaml"), 0o755))
	_, stderr, code := run(t, "migrate", fixtures+"kyverno/disallow-host-path", "--out", out)
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "a directory has that name; nothing was written")
	assert.NoFileExists(t, filepath.Join(out, "disallow-host-path", "validatingpolicy.yaml"))
}

// Every file of a directory is reported: a policy whose apiVersion has a
// space before its colon is migrated, kinds admitc does not read are
// refused with the compiler's reason, artifacthub-pkg.yml is skipped, and
// the rest is still written (exit 1).
func TestMigrateReportsEveryFileAndWritesTheRest(t *testing.T) {
	dir := "testdata/migrate/mixed"
	out := t.TempDir()
	stdout, stderr, code := run(t, "migrate", dir, "--out", out)
	assert.Equal(t, ExitFailed, code, stderr)
	assert.Empty(t, stderr)
	for _, want := range []string{
		"skipped file " + dir + "/artifacthub-pkg.yml: not a policy file (no kind and no policies list: an Artifact Hub package, Helm values or chart file)\n",
		"REFUSED file " + dir + "/generate-network-policy.yaml: does not compile: " + dir + "/generate-network-policy.yaml:2:7: kind: admitc reads kyverno.io/v1 (and v2beta1) ClusterPolicy and Policy, and policies.kyverno.io ValidatingPolicy, NamespacedValidatingPolicy and MutatingPolicy in v1alpha1, v1beta1 and v1; not policies.kyverno.io/v1 GeneratingPolicy\n",
		"REFUSED file " + dir + "/verify-image-signatures.yaml: does not compile: " + dir + "/verify-image-signatures.yaml:2:7: kind: admitc reads",
		"not policies.kyverno.io/v1 ImageValidatingPolicy\n",
		"ClusterPolicy require-team-label (" + dir + "/require-team-label.yaml) -> require-team-label/\n  OK        check-team -> validatingpolicy.yaml: require-team-label,",
		"1 rules: 1 translated, 0 translated with a difference, 0 refused\n",
		"4 files: 1 migrated, 1 skipped (no policy), 2 refused\n",
	} {
		assert.Contains(t, stdout, want)
	}
	assert.FileExists(t, filepath.Join(out, "require-team-label", "validatingpolicy.yaml"))
	assert.FileExists(t, filepath.Join(out, "require-team-label", "vap.yaml"))

	_, report, code := run(t, "migrate", "-o", "json", dir)
	assert.Equal(t, ExitFailed, code)
	var rep struct {
		Files []struct{ File, Status, Reason string } `json:"files"`
	}
	require.NoError(t, json.Unmarshal([]byte(report), &rep))
	statuses := map[string]string{}
	for _, f := range rep.Files {
		statuses[filepath.Base(f.File)] = f.Status
	}
	assert.Equal(t, map[string]string{"artifacthub-pkg.yml": "skipped", "generate-network-policy.yaml": "refused", "require-team-label.yaml": "migrated", "verify-image-signatures.yaml": "refused"}, statuses)
}

// A migrated test of a mutate rule expects what the MutatingPolicy
// reports: pass where the rule's patch changed nothing (the rule's skip,
// "no patches applied"), since Kyverno's MutatingPolicy engine passes
// whenever it evaluates.
func TestMigratedMutateTestExpectsTheSuccessorsAnswers(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, code := run(t, "migrate", fixtures+"kyverno-mutate/add-labels", "--out", out)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "(3 results, 1 changed for the successor kind, 0 resources dropped)")
	data, err := os.ReadFile(filepath.Join(out, "add-labels", ".kyverno-test", "kyverno-test.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "- isMutatingPolicy: true\n  kind: Service\n  policy: add-labels\n  resources:\n  - already\n  result: pass\n")
	assert.NotContains(t, string(data), "result: skip")

	stdout, _, code = run(t, "verify", out)
	assert.Equal(t, ExitOK, code, stdout)
	assert.Contains(t, stdout, "3 expected result(s): 3 passed, 0 failed, 0 unsupported, 0 error(s)\n")
}
