package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/internal/cli"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// outputs are the files a case may hold besides its inputs.
var outputs = []string{"ir.json", "vap.yaml", "map.yaml", "webhook.yaml", "kyverno.yaml", "kyverno-cel.yaml", "kyverno-cel-errors.txt", "gatekeeper.yaml", "gatekeeper-errors.txt", "test.txt", "errors.txt"}

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
	for _, name := range yamlOutputs {
		if len(got[name]) > 0 {
			assert.NoError(t, decodeStrict(got[name]), name)
		}
	}
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
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	assert.Equal(t, string(want), string(got), "%s differs; run `make golden` and review the diff", path)
}
