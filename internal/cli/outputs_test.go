package cli

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/generate"
	"github.com/admitc/admitc/runtime"
)

// snapshot is every file of a directory: its bytes and mode.
type snapshot map[string]struct {
	data string
	mode fs.FileMode
}

func takeSnapshot(t *testing.T, dir string) snapshot {
	t.Helper()
	out := snapshot{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		var data []byte
		if info.Mode().IsRegular() {
			data, err = os.ReadFile(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
		}
		out[e.Name()] = struct {
			data string
			mode fs.FileMode
		}{string(data), info.Mode()}
	}
	return out
}

func TestCompileOutputIndependentOfPathSpellingAndDirectory(t *testing.T) {
	abs, err := filepath.Abs(fixtures + "policies/policies.json")
	require.NoError(t, err)
	out := t.TempDir()
	relArgs := []string{"compile", "--policies", fixtures + "policies/policies.json", "--namespace", "shop", "--ir"}
	fromHere, stderr, code := run(t, relArgs...)
	require.Equal(t, ExitOK, code, stderr)
	_, stderr, code = run(t, append(relArgs, "--out", out)...)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, fromHere, "admitc.dev/origin: policies.json:")
	assert.Contains(t, fromHere, `"file": "policies.json"`)
	assert.NotContains(t, fromHere, "examples/")

	t.Chdir(t.TempDir())
	absArgs := []string{"compile", "--policies", abs, "--namespace", "shop", "--ir"}
	fromElsewhere, stderr, code := run(t, absArgs...)
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, fromHere, fromElsewhere, "same policy file, spelled differently, from another directory")

	stdout, stderr, code := run(t, append(absArgs, "--check", out)...)
	assert.Equal(t, ExitOK, code, stderr)
	assert.Empty(t, stdout)
}

func TestCompileErrorsKeepThePathAsTyped(t *testing.T) {
	abs, err := filepath.Abs(fixtures + "policies/labels-policy.json")
	require.NoError(t, err)
	_, stderr, code := run(t, "compile", "--policies", abs, "--backend", "map", "--kube-version", "1.33", "--namespace", "shop")
	assert.Equal(t, ExitUsage, code)
	assert.True(t, strings.HasPrefix(stderr, "error: cannot compile:\n"+abs+":2:3: policies[0]: "), stderr)
}

func TestCompileOutWritesMode0644(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vap.yaml"), []byte("old\n"), 0o600))
	_, stderr, code := run(t, "compile", "--policies", fixtures+"policies/policies.json", "--namespace", "shop", "--out", dir)
	require.Equal(t, ExitOK, code, stderr)
	snap := takeSnapshot(t, dir)
	assert.Len(t, snap, 4)
	for _, name := range []string{"vap.yaml", "map.yaml", "webhook.yaml", "kyverno.yaml"} {
		assert.Equal(t, fs.FileMode(0o644), snap[name].mode, name)
	}
	assert.NotEqual(t, "old\n", snap["vap.yaml"].data)
}

func TestCompileOutBlockedNameLeavesThePreviousSet(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := run(t, "compile", "--policies", fixtures+"policies/policies.json", "--namespace", "shop", "--ir", "--out", dir)
	require.Equal(t, ExitOK, code, stderr)
	require.NoError(t, os.Chmod(filepath.Join(dir, "map.yaml"), 0o600))
	require.NoError(t, os.Remove(filepath.Join(dir, "kyverno.yaml")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "kyverno.yaml"), 0o755))
	before := takeSnapshot(t, dir)

	// A different policy set: every file would change and vap.yaml would go.
	_, stderr, code = run(t, "compile", "--policies", fixtures+"policies/labels-policy.json", "--namespace", "payments", "--out", dir)
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: write "+filepath.Join(dir, "kyverno.yaml")+": a directory has that name; nothing was written\n", stderr)
	assert.Equal(t, before, takeSnapshot(t, dir), "every previous file is byte-identical, with its mode, and no temporary file is left")
}

func TestSetWriterRestoresThePreviousFilesWhenARenameFails(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"vap.yaml": "old vap\n", "map.yaml": "old map\n", "webhook.yaml": "old webhook\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600))
	}
	before := takeSnapshot(t, dir)
	files := []generate.File{
		{Name: "vap.yaml", Data: []byte("new vap\n")},
		{Name: "map.yaml"}, // removed: the new set has no mutating policy
		{Name: "webhook.yaml", Data: []byte("new webhook\n")},
		{Name: "kyverno.yaml", Data: []byte("new kyverno\n")},
	}
	blocked := setWriter{rename: func(oldpath, newpath string) error {
		if strings.Contains(oldpath, ".new-") && filepath.Base(newpath) == "webhook.yaml" {
			return &fs.PathError{Op: "rename", Path: newpath, Err: fs.ErrPermission}
		}
		return os.Rename(oldpath, newpath)
	}}
	err := blocked.write(dir, files)
	require.Error(t, err)
	assert.Equal(t, "write "+filepath.Join(dir, "webhook.yaml")+": rename "+filepath.Join(dir, "webhook.yaml")+": permission denied; the previous files are unchanged", err.Error())
	assert.Equal(t, before, takeSnapshot(t, dir))

	require.NoError(t, setWriter{rename: os.Rename}.write(dir, files))
	after := takeSnapshot(t, dir)
	assert.Equal(t, []string{"kyverno.yaml", "vap.yaml", "webhook.yaml"}, slices.Sorted(maps.Keys(after)))
	assert.Equal(t, "new webhook\n", after["webhook.yaml"].data)
	assert.Equal(t, fs.FileMode(0o644), after["webhook.yaml"].mode)
}

func TestWebhookConfigPrintsWhatCompileBackendWebhookPrints(t *testing.T) {
	for name, flags := range map[string][]string{
		"defaults":      {"--namespace", "shop"},
		"policies":      {"--policies", fixtures + "policies/cel-policies.json", "--namespace", "shop", "--ca-bundle", "../../golden/testdata/ca.crt"},
		"no deployment": {"--namespace", "shop", "--deployment=false"},
		"url":           {"--namespace", "shop", "--url", "https://admitc.example:8443"},
	} {
		t.Run(name, func(t *testing.T) {
			shortcut, stderr, code := run(t, append([]string{"webhook-config"}, flags...)...)
			require.Equal(t, ExitOK, code, stderr)
			compiled, stderr, code := run(t, append([]string{"compile", "--backend", "webhook"}, flags...)...)
			require.Equal(t, ExitOK, code, stderr)
			assert.Equal(t, compiled, shortcut)
		})
	}
	out, _, _ := run(t, "webhook-config", "--namespace", "shop")
	assert.Contains(t, out, "kind: Deployment\n")
	out, _, _ = run(t, "webhook-config", "--namespace", "shop", "--deployment=false")
	assert.NotContains(t, out, "kind: Deployment\n")
}

func TestWebhookConfigNeedsANamespace(t *testing.T) {
	for _, args := range [][]string{
		{"webhook-config"},
		{"webhook-config", "--policies", fixtures + "policies/policies.json"},
	} {
		out, stderr, code := run(t, args...)
		assert.Equal(t, ExitUsage, code)
		assert.Empty(t, out)
		assert.Equal(t, "error: webhook-config needs --namespace: name every namespace whose requests go to the webhook, "+
			"for example --namespace shop --namespace payments (kube-system and the webhook's own namespace are refused)\n", stderr)
	}
	_, stderr, code := run(t, "webhook-config", "--namespace", "shop", "--namespace", "kube-system")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "refusing to send kube-system to a webhook")
}

func TestCompileStdoutLabelsEachBackend(t *testing.T) {
	out, stderr, code := run(t, "compile", "--ir")
	require.Equal(t, ExitOK, code, stderr)
	var headers []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "# --- ") {
			headers = append(headers, line)
		}
	}
	assert.Equal(t, []string{
		"# --- ir.json (the compiled IR, for review only; not a Kubernetes object) ---",
		"# --- backend: vap (enforced by the API server; apply vap and map OR the webhook backend, never both) ---",
		"# --- backend: map (enforced by the API server; apply vap and map OR the webhook backend, never both) ---",
		"# --- backend: webhook (enforced by admitc serve; apply this OR the vap and map backends, never both) ---",
		"# --- backend: kyverno (for clusters running Kyverno; apply this instead of the other backends) ---",
	}, headers)
	assert.True(t, strings.HasPrefix(out, headers[0]+"\n{\n"))
	assert.Contains(t, out, "\n---\n"+headers[1]+"\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n")

	// Still valid multi-document YAML: every document is one object.
	docs := strings.Split(out, "\n---\n")
	for i, doc := range docs {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj), "document %d", i)
		if i > 0 {
			assert.NotEmpty(t, obj["kind"], "document %d", i)
		}
	}

	// A Kubernetes client reads every object of the stream, headers and all.
	stream, _, code := run(t, "compile")
	require.Equal(t, ExitOK, code)
	objs, err := runtime.DecodeManifests("stdout", []byte(stream))
	require.NoError(t, err)
	assert.Len(t, objs, strings.Count(stream, "\nkind: "), "one object per top-level kind")

	single, _, code := run(t, "compile", "--backend", "vap", "--policies", fixtures+"policies/cel-policies.json")
	require.Equal(t, ExitOK, code)
	assert.True(t, strings.HasPrefix(single, "apiVersion: "), "one backend: no header")
}

func TestCompileHelpSaysWhichBackendToApply(t *testing.T) {
	out, _, code := run(t, "compile", "--help")
	require.Equal(t, ExitOK, code)
	for _, want := range []string{
		"Apply one enforcement path per cluster, never two: vap and map\n(ValidatingAdmissionPolicy, MutatingAdmissionPolicy) are enforced by the API\nserver itself; webhook is the same policies sent to admitc serve; kyverno (and\nthe opt-in kyverno-cel) are for clusters that run Kyverno.",
		"name a policy file by its base name only",
		"Files are written with mode 0644",
	} {
		assert.Contains(t, out, want)
	}
}

func TestSetWriterMakesEachFileWhenItComesToIt(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report-a.yaml"), []byte("old a\n"), 0o644))
	before := takeSnapshot(t, dir)
	names := []string{"report-a.yaml", "report-b.yaml", "report-c.yaml"}
	var made []int
	failAt := 2
	data := func(i int) ([]byte, error) {
		assert.Len(t, takeSnapshot(t, dir), 1+i, "the files before %s are staged when it is made, the rest not yet", names[i])
		made = append(made, i)
		if i == failAt {
			return nil, errors.New("render: no")
		}
		return []byte("new " + names[i] + "\n"), nil
	}
	err := setWriter{rename: os.Rename}.writeEach(dir, names, data)
	require.Error(t, err)
	assert.Equal(t, "write "+filepath.Join(dir, "report-c.yaml")+": render: no; nothing was written", err.Error())
	assert.Equal(t, []int{0, 1, 2}, made)
	assert.Equal(t, before, takeSnapshot(t, dir), "a file that cannot be made writes nothing, and no staged file is left")

	failAt, made = -1, nil
	require.NoError(t, setWriter{rename: os.Rename}.writeEach(dir, names, data))
	after := takeSnapshot(t, dir)
	assert.Equal(t, names, slices.Sorted(maps.Keys(after)))
	assert.Equal(t, "new report-a.yaml\n", after["report-a.yaml"].data)
}
