//go:build !serveonly

package cli

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/admitc/admitc/internal/generate"
)

// writeStdout writes every non-empty file to w, "---"-separated. When more
// than one file has content, each starts with its header comment, so a
// reader sees where one backend ends and the next (which may enforce the
// same policies a second way) begins.
func writeStdout(w io.Writer, files []generate.File) error {
	var nonEmpty []generate.File
	for _, f := range files {
		if len(f.Data) > 0 {
			nonEmpty = append(nonEmpty, f)
		}
	}
	for i, f := range nonEmpty {
		var section bytes.Buffer
		if i > 0 {
			section.WriteString("---\n")
		}
		if len(nonEmpty) > 1 {
			section.WriteString(f.Header)
		}
		section.Write(f.Data)
		if _, err := w.Write(section.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// FileMode is the mode of every file compile --out writes: generated
// manifests are meant to be committed and read, never secret. It is set
// explicitly, so the umask does not change it.
const FileMode fs.FileMode = 0o644

// writeDir replaces dir's files with files as one set (see setWriter).
func writeDir(dir string, files []generate.File) error {
	return setWriter{rename: os.Rename}.write(dir, files)
}

// checkDir compares files with what dir holds (a missing file means empty)
// and writes a unified diff of every difference to w. It reports whether
// everything matched.
func checkDir(w io.Writer, dir string, files []generate.File) (bool, error) {
	same := true
	for _, f := range files {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		have, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			return false, err
		}
		if bytes.Equal(have, f.Data) {
			continue
		}
		same = false
		diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(string(have)), B: difflib.SplitLines(string(f.Data)),
			FromFile: path + " (checked in)", ToFile: path + " (generated)", Context: 3,
		})
		if err != nil {
			return false, err
		}
		if !strings.HasSuffix(diff, "\n") {
			diff += "\n"
		}
		if _, err := io.WriteString(w, diff); err != nil {
			return false, err
		}
	}
	return same, nil
}
