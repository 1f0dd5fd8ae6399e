//go:build !serveonly

package cli

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/admitc/admitc/internal/generate"
)

// setWriter replaces a directory's generated files as one set: either every
// file is the new one, or (when anything fails) every file is as it was.
//
// It refuses up front a name that is taken by something other than a
// regular file, stages every new file as a temporary file in the target
// directory (so a full disk fails before anything is replaced), then moves
// each previous file aside and renames the staged one into place. A failure
// while renaming moves every previous file back. Temporary files start with
// a dot and are removed on success and on failure.
//
// A file's name may hold subdirectories ("static/validating-policies/
// manifests.yaml"): they are created before anything is replaced, and its
// staged and set-aside copies live next to it, so every rename stays within
// one directory. A directory created for the set is left when the set fails.
type setWriter struct {
	// rename is os.Rename; tests inject failures here.
	rename func(oldpath, newpath string) error
}

// change is one file of the set: its final path, the staged new content
// ("" when the file is to be removed) and, once moved aside, the previous file.
type change struct {
	path, staged, backup string
	placed               bool
}

// write replaces dir's files with files; a file with no data is removed.
func (s setWriter) write(dir string, files []generate.File) error {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	return s.writeEach(dir, names, func(i int) ([]byte, error) { return files[i].Data, nil })
}

// writeEach is write for files whose data is made one at a time, by
// data(i) for names[i], and staged before the next is made: a large set is
// never held in memory whole. An error from data writes nothing.
func (s setWriter) writeEach(dir string, names []string, data func(i int) ([]byte, error)) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	if err := checkTargets(dir, names); err != nil {
		return err
	}
	changes, err := stage(dir, names, data)
	if err != nil {
		return err
	}
	for i := range changes {
		if err := s.commit(&changes[i]); err != nil {
			if rerr := s.rollback(changes); rerr != nil {
				return fmt.Errorf("write %s: %w; restoring the previous files failed too: %v", changes[i].path, err, rerr)
			}
			return fmt.Errorf("write %s: %w; the previous files are unchanged", changes[i].path, err)
		}
	}
	for _, c := range changes {
		if c.backup != "" {
			_ = os.Remove(c.backup)
		}
	}
	return nil
}

// checkTargets refuses a name that leaves dir, and a name (or one of its
// parent directories) held by something else than a regular file (a
// directory), before anything is written.
func checkTargets(dir string, names []string) error {
	for _, name := range names {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			return fmt.Errorf("write %s: the name leaves the output directory; nothing was written", path)
		}
		if err := checkParents(dir, name); err != nil {
			return err
		}
		info, err := os.Lstat(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("write %s: %w", path, err)
		case info.IsDir():
			return fmt.Errorf("write %s: a directory has that name; nothing was written", path)
		case !info.Mode().IsRegular():
			return fmt.Errorf("write %s: something other than a regular file has that name; nothing was written", path)
		}
	}
	return nil
}

// checkParents refuses a parent of name (below dir) that exists as anything
// but a directory.
func checkParents(dir, name string) error {
	parent := dir
	parts := strings.Split(name, "/")
	for _, part := range parts[:len(parts)-1] {
		parent = filepath.Join(parent, part)
		info, err := os.Lstat(parent)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil
		case err != nil:
			return fmt.Errorf("write %s: %w", parent, err)
		case !info.IsDir():
			return fmt.Errorf("write %s: %s is not a directory; nothing was written", filepath.Join(dir, filepath.FromSlash(name)), parent)
		}
	}
	return nil
}

// stage writes every non-empty file to a temporary file in dir with mode
// FileMode, making each one's data when it comes to it. On failure it
// removes what it staged.
func stage(dir string, names []string, data func(i int) ([]byte, error)) ([]change, error) {
	changes := make([]change, 0, len(names))
	for i, name := range names {
		c := change{path: filepath.Join(dir, filepath.FromSlash(name))}
		d, err := data(i)
		if err != nil {
			removeStaged(changes)
			return nil, fmt.Errorf("write %s: %w; nothing was written", c.path, err)
		}
		if len(d) > 0 {
			staged, err := stageFile(filepath.Dir(c.path), generate.File{Name: name, Data: d})
			if err != nil {
				removeStaged(changes)
				return nil, fmt.Errorf("write %s: %w; nothing was written", c.path, err)
			}
			c.staged = staged
		}
		changes = append(changes, c)
	}
	return changes, nil
}

// stageFile writes f's data to a new temporary file in dir (created when
// missing) and returns its name.
func stageFile(dir string, f generate.File) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "."+path.Base(f.Name)+".new-*")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(f.Data)
	merr := tmp.Chmod(FileMode)
	cerr := tmp.Close()
	if err := errors.Join(werr, merr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// commit moves c's previous file aside (when there is one) and renames the
// staged file into place (when there is one).
func (s setWriter) commit(c *change) error {
	if _, err := os.Lstat(c.path); err == nil {
		backup, err := reserveName(filepath.Dir(c.path), filepath.Base(c.path))
		if err != nil {
			return err
		}
		if err := s.rename(c.path, backup); err != nil {
			_ = os.Remove(backup)
			return err
		}
		c.backup = backup
	}
	if c.staged == "" {
		return nil
	}
	if err := s.rename(c.staged, c.path); err != nil {
		return err
	}
	c.placed = true
	return nil
}

// reserveName creates an empty temporary file for a previous file to be
// renamed over, so the name cannot clash with anything in dir.
func reserveName(dir, name string) (string, error) {
	f, err := os.CreateTemp(dir, "."+name+".old-*")
	if err != nil {
		return "", err
	}
	return f.Name(), f.Close()
}

// rollback undoes every change, last first: a placed file is removed and the
// previous file moved back; staged files not placed are removed.
func (s setWriter) rollback(changes []change) error {
	var errs []error
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		if c.placed {
			errs = append(errs, os.Remove(c.path))
		} else if c.staged != "" {
			_ = os.Remove(c.staged)
		}
		if c.backup != "" {
			errs = append(errs, s.rename(c.backup, c.path))
		}
	}
	return errors.Join(errs...)
}

// removeStaged removes the temporary files of changes.
func removeStaged(changes []change) {
	for _, c := range changes {
		if c.staged != "" {
			_ = os.Remove(c.staged)
		}
	}
}
