package golden

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/internal/cli"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// outputs are the files a case may hold besides its inputs.
var outputs = []string{"ir.json", "vap.yaml", "map.yaml", "webhook.yaml", "kyverno.yaml", "kyverno-cel.yaml", "kyverno-cel-errors.txt", "gatekeeper.yaml", "gatekeeper-errors.txt", "test.txt", "errors.txt", "static-errors.txt"}

// staticDir is the directory output of the opt-in static backend, compiled
// for a case that has a static.flags file (which may be empty).
const staticDir = "static"

// yamlOutputs are the files decoded strictly into typed objects.
var yamlOutputs = []string{"vap.yaml", "map.yaml", "webhook.yaml", "kyverno.yaml", "kyverno-cel.yaml"}

// The manifests every non-error case is tested against.
var manifests = []string{"examples/manifests", "examples/more"}

func TestMain(m *testing.M) {
	// Run from the repository root so every path in an output is repo-relative.
	if err := os.Chdir(".."); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("golden/*")
	require.NoError(t, err)
	cases := 0
	for _, dir := range dirs {
		if filepath.Base(dir) == "testdata" {
			continue
		}
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			continue
		}
		cases++
		t.Run(filepath.Base(dir), func(t *testing.T) { runCase(t, dir) })
	}
	require.Greater(t, cases, 20, "the golden corpus is missing")
}

func runCase(t *testing.T, dir string) {
	input := inputPath(t, dir)
	got := map[string][]byte{}
	out := t.TempDir()
	args := append([]string{"compile", "--policies", input, "--ir", "--out", out}, flags(t, dir, "compile.flags")...)
	stdout, stderr, code := run(args...)
	switch code {
	case cli.ExitOK:
		require.Empty(t, stdout)
		for _, name := range yamlOutputs[:4] {
			if data, err := os.ReadFile(filepath.Join(out, name)); err == nil {
				got[name] = data
			}
		}
		if data, err := os.ReadFile(filepath.Join(out, "ir.json")); err == nil {
			got["ir.json"] = data
		}
		celArgs := append([]string{"compile", "--policies", input, "--backend", "kyverno-cel"}, flags(t, dir, "compile.flags")...)
		if stdout, stderr, code := run(celArgs...); code == cli.ExitOK {
			got["kyverno-cel.yaml"] = []byte(stdout)
		} else {
			got["kyverno-cel-errors.txt"] = []byte(stderr)
		}
		// Gatekeeper takes validating policies only: mutating ones go to map.
		gkArgs := append([]string{"compile", "--policies", input, "--backend", "gatekeeper,map"}, flags(t, dir, "compile.flags")...)
		if stdout, stderr, code := run(gkArgs...); code == cli.ExitOK {
			got["gatekeeper.yaml"] = []byte(stdout)
		} else {
			got["gatekeeper-errors.txt"] = []byte(stderr)
		}
		for name, data := range compileStatic(t, dir, input) {
			got[name] = data
		}
		testArgs := append(append([]string{"test", "--policies", input}, flags(t, dir, "test.flags")...), manifests...)
		stdout, stderr, code = run(testArgs...)
		require.Contains(t, []int{cli.ExitOK, cli.ExitFailed}, code, stderr)
		got["test.txt"] = []byte(stdout + stderr + "exit " + string(rune('0'+code)) + "\n")
	case cli.ExitUsage:
		got["errors.txt"] = []byte(stderr)
	default:
		t.Fatalf("compile exited %d: %s", code, stderr)
	}
	for _, name := range outputs {
		compare(t, filepath.Join(dir, name), got[name])
	}
	for _, name := range append(sortedKeys(got, staticDir+"/"), goldenOnly(t, dir, got)...) {
		compare(t, filepath.Join(dir, filepath.FromSlash(name)), got[name])
	}
	for _, name := range append(yamlOutputs, sortedKeys(got, staticDir+"/")...) {
		if len(got[name]) > 0 {
			assert.NoError(t, decodeStrict(got[name]), name)
		}
	}
}

// compileStatic runs the static backend for a case with static.flags: its
// tree as "static/..." outputs, or its errors as static-errors.txt.
func compileStatic(t *testing.T, dir, input string) map[string][]byte {
	if _, err := os.Stat(filepath.Join(dir, "static.flags")); err != nil {
		return nil
	}
	out := t.TempDir()
	args := append([]string{"compile", "--policies", input, "--backend", "static", "--out", out}, flags(t, dir, "static.flags")...)
	_, stderr, code := run(args...)
	if code != cli.ExitOK {
		return map[string][]byte{"static-errors.txt": []byte(stderr)}
	}
	got := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(filepath.Join(out, staticDir), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(out, path)
		got[filepath.ToSlash(rel)] = data
		return err
	}))
	return got
}

// goldenOnly are the files of the case's static directory that were not
// generated: each must go (compared with empty).
func goldenOnly(t *testing.T, dir string, got map[string][]byte) []string {
	var out []string
	err := filepath.WalkDir(filepath.Join(dir, staticDir), func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if _, ok := got[filepath.ToSlash(rel)]; !ok {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// sortedKeys are got's names that start with prefix, sorted.
func sortedKeys(got map[string][]byte, prefix string) []string {
	var out []string
	for name := range got {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func inputPath(t *testing.T, dir string) string {
	for _, name := range []string{"policy.yaml", "policy.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	ref, err := os.ReadFile(filepath.Join(dir, "policy.ref"))
	require.NoError(t, err, "a case needs policy.yaml, policy.json or policy.ref")
	return strings.TrimSpace(string(ref))
}

func flags(t *testing.T, dir, name string) []string {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(data))
}

func run(args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	code := cli.Execute(cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, args)
	return out.String(), errOut.String(), code
}

// compare checks got against the golden file (missing means empty), or
// rewrites it with -update.
func compare(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if len(got) == 0 {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			return
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	assert.Equal(t, string(want), string(got), "%s differs; run `make golden` and review the diff", path)
}
