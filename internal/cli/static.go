//go:build !serveonly

package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/admitc/admitc/backends/static"
	"github.com/admitc/admitc/internal/generate"
	"github.com/admitc/admitc/internal/staticdir"
)

// staticPrefix starts the name of every file of the static backend.
const staticPrefix = "static/"

// staticFiles returns the static backend's files, names relative to its
// directory.
func staticFiles(files []generate.File) []generate.File {
	var out []generate.File
	for _, f := range files {
		if rel, ok := strings.CutPrefix(f.Name, staticPrefix); ok {
			out = append(out, generate.File{Name: rel, Data: f.Data})
		}
	}
	return out
}

// verifyStatic loads the generated static tree with kube-apiserver's own
// loaders, from a temporary directory, so compile never emits a tree
// kube-apiserver would refuse to start with.
func verifyStatic(files []generate.File, root string) error {
	tree := staticFiles(files)
	if len(tree) == 0 {
		return nil
	}
	tmp, err := os.MkdirTemp("", "admitc-static-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := writeDir(tmp, tree); err != nil {
		return err
	}
	if err := staticdir.Verify(tmp, root); err != nil {
		return fmt.Errorf("kube-apiserver would refuse to start with the static manifests:\n%s", strings.ReplaceAll(err.Error(), tmp+string(filepath.Separator), staticPrefix))
	}
	return nil
}

// refuseStrays refuses to write the static tree into dir when one of its
// plugin directories holds a file admitc does not write: kube-apiserver
// loads every .yaml, .yml and .json file there.
func refuseStrays(dir string, files []generate.File) error {
	strays, err := staticStrays(dir, files)
	if err != nil || len(strays) == 0 {
		return err
	}
	return fmt.Errorf("%s: kube-apiserver loads every .yaml, .yml and .json file of a static manifests directory, and admitc does not write this; move it out or delete it; nothing was written", strings.Join(strays, ", "))
}

func staticStrays(dir string, files []generate.File) ([]string, error) {
	tree := staticFiles(files)
	if len(tree) == 0 {
		return nil, nil
	}
	var want []string
	for _, f := range tree {
		want = append(want, f.Name)
	}
	return staticdir.Strays(filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(staticPrefix, "/"))), want)
}

// checkStaticDir reports, for --check, what in dir's static tree
// kube-apiserver would load beyond admitc's files, and why it would refuse
// to start with the tree. It reports whether the tree is sound.
func checkStaticDir(w io.Writer, dir, root string, files []generate.File) (bool, error) {
	strays, err := staticStrays(dir, files)
	if err != nil {
		return false, err
	}
	sound := true
	for _, s := range strays {
		sound = false
		fmt.Fprintf(w, "%s: not written by admitc, and kube-apiserver loads it\n", s)
	}
	tree := filepath.Join(dir, strings.TrimSuffix(staticPrefix, "/"))
	if _, err := os.Stat(filepath.Join(tree, static.ConfigFile)); err != nil {
		return sound, nil
	}
	if err := staticdir.Verify(tree, root); err != nil {
		fmt.Fprintf(w, "kube-apiserver would refuse to start with %s:\n%v\n", tree, err)
		return false, nil
	}
	return sound, nil
}
