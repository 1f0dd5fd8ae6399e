//go:build unix

package cli

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runWithin is run, failing the test instead of hanging when the command
// does not return (a FIFO read waits for a writer forever).
func runWithin(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	type result struct {
		out, err string
		code     int
	}
	done := make(chan result, 1)
	go func() {
		out, err, code := run(t, args...)
		done <- result{out, err, code}
	}()
	select {
	case r := <-done:
		return r.out, r.err, r.code
	case <-time.After(2 * time.Minute):
		t.Fatalf("admitc %v did not return: it is blocked reading a FIFO", args)
		return "", "", 0
	}
}

// copyInto copies files into dir.
func copyInto(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		copyFile(t, f, filepath.Join(dir, filepath.Base(f)))
	}
}

// A FIFO that a test file names, or that sits in a directory admitc reads,
// is refused with exit 2 (verify, test, compile) or listed as unreadable
// (migrate) instead of blocking forever.
func TestFIFOsAreRefusedWhereAdmitcFindsThem(t *testing.T) {
	kyverno := t.TempDir()
	copyInto(t, kyverno, verifyData+"kyverno-wrong/kyverno-test.yaml", verifyData+"kyverno-wrong/policy.yaml")
	require.NoError(t, syscall.Mkfifo(filepath.Join(kyverno, "resources.yaml"), 0o600))
	_, stderr, code := runWithin(t, "verify", kyverno)
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "resources.yaml is a named pipe (FIFO), not a regular file: a file found in a directory or named by a test file must be a regular file (reading this one could block forever)")

	policies := t.TempDir()
	copyInto(t, policies, fixtures+"kyverno/disallow-host-path/policy.yaml")
	fifo := filepath.Join(policies, "more.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	pod := fixtures + "kyverno/disallow-host-path/.kyverno-test/resources.yaml"
	for _, args := range [][]string{
		{"test", "--policies", policies, pod},
		{"compile", "--policies", policies},
		{"verify", policies},
		{"test", "--policies", fixtures + "kyverno/disallow-host-path/policy.yaml", policies},
	} {
		_, stderr, code := runWithin(t, args...)
		assert.Equal(t, ExitUsage, code, args)
		assert.Contains(t, stderr, fifo+" is a named pipe (FIFO), not a regular file", args)
	}

	out, stderr, code := runWithin(t, "migrate", policies, "--out", t.TempDir())
	assert.Equal(t, ExitFailed, code, stderr)
	assert.Contains(t, out, "REFUSED file "+fifo+": unreadable: "+fifo+" is a named pipe (FIFO)")
	assert.Contains(t, out, "2 files: 1 migrated, 0 skipped (no policy), 1 refused\n")
}
