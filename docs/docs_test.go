// Package docs holds admitc's documents; its test runs their offline shell
// blocks (see internal/doctest).
package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/internal/doctest"
)

func TestDocumentedCommandsRun(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	bin := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "admitc"), filepath.Join(root, "cmd/admitc")).CombinedOutput()
	require.NoError(t, err, string(out))
	work := t.TempDir()
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "WORK=" + work}
	files, err := filepath.Glob(filepath.Join(root, "docs/*.md"))
	require.NoError(t, err)
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	total := 0
	for _, f := range files {
		blocks, err := doctest.Parse(f, "test")
		require.NoError(t, err)
		for _, b := range blocks {
			total += len(b.Commands)
			t.Run(filepath.Base(f)+":"+itoa(b.Line), func(t *testing.T) { doctest.Run(t, b, root, env) })
		}
	}
	require.Greater(t, total, 10, "the documents lost their runnable examples")
}

func itoa(n int) string {
	s := ""
	for n > 0 || s == "" {
		s = string(rune('0'+n%10)) + s
		n /= 10
	}
	return s
}
