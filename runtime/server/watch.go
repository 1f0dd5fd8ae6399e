package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// atomicWriterData is the symlink the kubelet swaps, in one rename, to
// update every file of a mounted ConfigMap or Secret: the volume holds
// `policies.json -> ..data/policies.json` and `..data -> ..2026_12_02_...`.
const atomicWriterData = "..data"

// debounce is how long Watch waits for a burst of events to end.
const debounce = 200 * time.Millisecond

// WatchSpec says which files Watch reacts to.
type WatchSpec struct {
	// Paths are the watched files and directories.
	Paths []string
	// DirEntry reports whether an entry of a watched directory is one of its
	// files (policy files by extension, say); nil counts every entry.
	DirEntry func(name string) bool
}

// Watch calls onChange (debounced) whenever one of the watched files
// changes, until ctx ends. It watches the files' directories, so the symlink
// swap of a mounted ConfigMap or Secret is seen too, but it reacts only to
// events that concern the watched files: a log file written next to them
// never triggers a reload.
func Watch(ctx context.Context, spec WatchSpec, logger *slog.Logger, onChange func()) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	set := newWatchSet(spec)
	for _, dir := range set.watchedDirs() {
		if err := w.Add(dir); err != nil {
			w.Close()
			return fmt.Errorf("watch %s: %w", dir, err)
		}
	}
	go set.loop(ctx, w, logger, onChange)
	return nil
}

// watchSet knows which events in the watched directories concern the
// watched files.
type watchSet struct {
	// files are the watched files, dirs the watched directories whose
	// entries count when entry accepts their name.
	files, dirs map[string]bool
	entry       func(name string) bool
	// targets are the files' resolved paths, to see a symlink further up
	// the chain being swapped.
	targets map[string]string
}

func newWatchSet(spec WatchSpec) *watchSet {
	s := &watchSet{files: map[string]bool{}, dirs: map[string]bool{}, entry: spec.DirEntry, targets: map[string]string{}}
	for _, p := range spec.Paths {
		p = filepath.Clean(p)
		if info, err := os.Stat(p); err == nil && info.IsDir() {
			s.dirs[p] = true
			continue
		}
		s.files[p] = true
		s.targets[p] = resolve(p)
	}
	return s
}

// watchedDirs are the directories to give inotify: the watched
// directories and the directories holding the watched files.
func (s *watchSet) watchedDirs() []string {
	seen := map[string]bool{}
	var out []string
	add := func(d string) {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	for d := range s.dirs {
		add(d)
	}
	for f := range s.files {
		add(filepath.Dir(f))
	}
	return out
}

// concerns reports whether ev changes a watched file: an event on the file
// itself, on an accepted entry of a watched directory, on the kubelet's
// ..data symlink, or any rename that changes where a watched file resolves.
func (s *watchSet) concerns(ev fsnotify.Event) bool {
	if ev.Op&^fsnotify.Chmod == 0 {
		return false
	}
	// Writing a file never moves a symlink: only creations, renames and
	// removals can retarget a watched file. Check them all, so the targets
	// stay current even when the event also counts by name.
	moved := ev.Op.Has(fsnotify.Create|fsnotify.Rename|fsnotify.Remove) && s.retargeted()
	name := filepath.Clean(ev.Name)
	dir, base := filepath.Dir(name), filepath.Base(name)
	return moved || s.files[name] || base == atomicWriterData || (s.dirs[dir] && (s.entry == nil || s.entry(base)))
}

// retargeted reports whether a watched file now resolves elsewhere.
func (s *watchSet) retargeted() bool {
	changed := false
	for f, old := range s.targets {
		if now := resolve(f); now != old {
			s.targets[f] = now
			changed = true
		}
	}
	return changed
}

// resolve is the path f resolves to through every symlink, or "" while it
// does not exist.
func resolve(f string) string {
	p, err := filepath.EvalSymlinks(f)
	if err != nil {
		return ""
	}
	return p
}

// loop turns the events that concern the watched files into debounced
// onChange calls until ctx ends.
func (s *watchSet) loop(ctx context.Context, w *fsnotify.Watcher, logger *slog.Logger, onChange func()) {
	defer w.Close()
	timer := time.NewTimer(debounce)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if s.concerns(ev) {
				timer.Reset(debounce)
			}
		case <-timer.C:
			onChange()
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			logger.Warn("file watch error", "error", err)
		}
	}
}
