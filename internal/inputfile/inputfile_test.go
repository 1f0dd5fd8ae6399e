//go:build unix

package inputfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pods.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	file := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(file, []byte("x: 1\n"), 0o644))
	link := filepath.Join(dir, "link.yaml")
	require.NoError(t, os.Symlink(file, link))

	assert.NoError(t, Check(file))
	assert.NoError(t, Check(dir))
	assert.NoError(t, Check(link), "a symbolic link to a regular file is read")
	assert.EqualError(t, Check(fifo), fifo+" is a named pipe (FIFO), not a regular file: a file found in a directory or named by a test file must be a regular file (reading this one could block forever)")
	assert.ErrorContains(t, Check("/dev/null"), "/dev/null is a character device, not a regular file")
	_, err := ReadFile(fifo)
	var nr *NotRegularError
	assert.ErrorAs(t, err, &nr)

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	refused := map[string]bool{}
	for _, e := range entries {
		refused[e.Name()] = CheckEntry(filepath.Join(dir, e.Name()), e) != nil
	}
	assert.Equal(t, map[string]bool{"pods.yaml": true, "policy.yaml": false, "link.yaml": false}, refused)
}
