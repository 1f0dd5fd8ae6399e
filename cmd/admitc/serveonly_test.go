package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeOnlyBuild: the serve-only build (tag serveonly) links none of
// the tools (backends, the comparison engines, the test-suite runners,
// migration) and has exactly the serving commands, which work.
func TestServeOnlyBuild(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "serveonly", "-deps", ".").CombinedOutput()
	require.NoError(t, err, string(out))
	deps := strings.Fields(string(out))
	for _, left := range []string{"internal/compare", "internal/verify", "internal/migrate", "internal/generate", "internal/upstream", "backends"} {
		for _, d := range deps {
			assert.False(t, d == "github.com/admitc/admitc/"+left || strings.HasPrefix(d, "github.com/admitc/admitc/"+left+"/"),
				"the serve-only build links %s", d)
		}
	}
	assert.Contains(t, deps, "github.com/admitc/admitc/runtime/server")

	bin := filepath.Join(t.TempDir(), "admitc-serve")
	out, err = exec.Command("go", "build", "-tags", "serveonly", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))

	help, err := exec.Command(bin, "--help").CombinedOutput()
	require.NoError(t, err, string(help))
	for _, c := range []string{"serve ", "certs ", "version "} {
		assert.Contains(t, string(help), "\n  "+c, "the serve-only build has %s", c)
	}
	for _, c := range []string{"compare ", "compile ", "verify ", "test "} {
		assert.NotContains(t, string(help), "\n  "+c, "the serve-only build has no %s", c)
	}

	cmd := exec.Command(bin, "serve", "--cert", "tls.crt", "--key", "tls.key")
	msg, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Equal(t, 2, cmd.ProcessState.ExitCode())
	assert.Contains(t, string(msg), "admitc serve needs --policies")

	cmd = exec.Command(bin, "serve", "--policies", "../../examples/kyverno-pattern/disallow-privileged-containers/policy.yaml", "--cert", "missing.crt", "--key", "missing.key")
	msg, err = cmd.CombinedOutput()
	require.Error(t, err, "no certificate")
	assert.NotContains(t, string(msg), "does not compile", "it reads Kyverno policies: %s", msg)
	assert.Contains(t, string(msg), "missing.crt")
}
