package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCertsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	out, stderr, code := run(t, "certs", "--out", dir, "--dns", "admitc.admission-system.svc", "--ip", "127.0.0.1")
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "wrote "+dir+"/ca.crt, "+dir+"/tls.crt and "+dir+"/tls.key\n", out)
	info, err := os.Stat(filepath.Join(dir, "tls.key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	_, stderr, code = run(t, "certs", "--out", dir, "--dns", "localhost")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: "+dir+"/ca.crt already exists; use --force to replace it\n", stderr)
	_, _, code = run(t, "certs", "--out", dir, "--dns", "localhost", "--force")
	assert.Equal(t, ExitOK, code)

	_, stderr, code = run(t, "certs", "--dns", "localhost")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: --out is required: the directory to write ca.crt, tls.crt and tls.key into\n", stderr)
	_, stderr, code = run(t, "certs", "--out", dir, "--ip", "not-an-ip", "--force")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: --ip \"not-an-ip\" is not an IP address\n", stderr)
	_, stderr, code = run(t, "certs", "--out", t.TempDir())
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "give at least one --dns name or --ip")
}
