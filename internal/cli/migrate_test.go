package cli

import (
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
	assert.Contains(t, stdout, "OK        check-team-label -> team-a-require-team-label, autogen-team-a-require-team-label, autogen-cronjob-team-a-require-team-label\n")
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
