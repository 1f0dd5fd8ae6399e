package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/admitc/admitc/internal/generate"
)

// writeStdout writes every non-empty file to w, "---"-separated.
func writeStdout(w io.Writer, files []generate.File) error {
	first := true
	for _, f := range files {
		if len(f.Data) == 0 {
			continue
		}
		if !first {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		first = false
		if _, err := w.Write(f.Data); err != nil {
			return err
		}
	}
	return nil
}

// writeDir writes each file into dir atomically (a temporary file renamed
// into place), and removes the file of a backend that now emits nothing.
// Every file is rendered before the first is written, so a failure never
// leaves a half-written set.
func writeDir(dir string, files []generate.File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
		if len(f.Data) == 0 {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				return err
			}
			continue
		}
		tmp, err := os.CreateTemp(dir, "."+f.Name+".*")
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		_, werr := tmp.Write(f.Data)
		cerr := tmp.Close()
		if werr != nil || cerr != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %v", path, firstErr(werr, cerr))
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// checkDir compares files with what dir holds (a missing file means empty)
// and writes a unified diff of every difference to w. It reports whether
// everything matched.
func checkDir(w io.Writer, dir string, files []generate.File) (bool, error) {
	same := true
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
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
