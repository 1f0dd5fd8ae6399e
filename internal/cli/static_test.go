package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/internal/generate"
)

func TestCompileStaticOutCheckAndStrays(t *testing.T) {
	dir := t.TempDir()
	args := []string{"compile", "--policies", fixtures + "policies/policies.json", "--namespace", "shop", "--backend", "static"}
	_, stderr, code := run(t, append(args, "--out", dir)...)
	require.Equal(t, ExitOK, code, stderr)
	for _, name := range []string{"admission-configuration.yaml", "validating-policies/manifests.yaml", "mutating-policies/manifests.yaml"} {
		assert.FileExists(t, filepath.Join(dir, "static", name))
	}
	assert.NoDirExists(t, filepath.Join(dir, "static", "validating-webhooks"), "nothing to load, no directory, not in the configuration")
	out, stderr, code := run(t, append(args, "--check", dir)...)
	require.Equal(t, ExitOK, code, stderr+out)

	// A file admitc did not write, of a kind the plugin does not load.
	stray := filepath.Join(dir, "static", "validating-policies", "extra.yaml")
	mutating, err := os.ReadFile(filepath.Join(dir, "static", "mutating-policies", "manifests.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(stray, mutating, 0o644))

	out, stderr, code = run(t, append(args, "--check", dir)...)
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, out, stray+": not written by admitc, and kube-apiserver loads it\n")
	assert.Contains(t, out, "error loading "+stray+": unsupported resource type *v1.MutatingAdmissionPolicy\n")
	assert.Contains(t, stderr, "is out of date")

	before := takeSnapshot(t, filepath.Join(dir, "static", "validating-policies"))
	_, stderr, code = run(t, append(args, "--out", dir)...)
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: "+stray+": kube-apiserver loads every .yaml, .yml and .json file of a static manifests directory, and admitc does not write this; move it out or delete it; nothing was written\n", stderr)
	assert.Equal(t, before, takeSnapshot(t, filepath.Join(dir, "static", "validating-policies")))
}

func TestCompileStaticRefusesWhatKubeAPIServerRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		args   []string
		stderr string
	}{
		"relative root": {
			args:   []string{"--static-root", "etc/admission"},
			stderr: "error: cannot compile:\n--static-root \"etc/admission\" must be an absolute path: kube-apiserver refuses a staticManifestsDir that is not (\"must be an absolute file path\")\n",
		},
		"root with a newline": {
			args:   []string{"--static-root", "/etc/admission\n"},
			stderr: "error: cannot compile:\n--static-root \"/etc/admission\\n\" holds the control character '\\n': kube-apiserver would look for a directory whose name has it; give the path without it\n",
		},
		"webhook without a URL": {
			args:   []string{"--static-webhook"},
			stderr: "error: cannot compile:\n--static-webhook needs --url: kube-apiserver refuses clientConfig.service in static webhook configurations (it loads them before any Service exists)\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := run(t, append([]string{"compile", "--backend", "static"}, tc.args...)...)
			assert.Equal(t, ExitUsage, code)
			assert.Equal(t, tc.stderr, stderr)
		})
	}
}

func TestCompileStaticWebhooks(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := run(t, "compile", "--backend", "static", "--static-webhook", "--url", "https://127.0.0.1:8443",
		"--ca-bundle", "../../golden/testdata/ca.crt", "--static-root", "/srv/admission", "--out", dir)
	require.Equal(t, ExitOK, code, stderr)
	cfg, err := os.ReadFile(filepath.Join(dir, "static", "admission-configuration.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(cfg), "staticManifestsDir: /srv/admission/validating-webhooks\n")
	assert.Contains(t, string(cfg), "staticManifestsDir: /srv/admission/mutating-webhooks\n")
	assert.NotContains(t, string(cfg), "policies")
	hooks, err := os.ReadFile(filepath.Join(dir, "static", "validating-webhooks", "manifests.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(hooks), "name: admitc.static.k8s.io\n")
	assert.Contains(t, string(hooks), "url: https://127.0.0.1:8443/validate\n")
}

func TestSetWriterNestedNames(t *testing.T) {
	dir := t.TempDir()
	files := []generate.File{{Name: "static/a/one.yaml", Data: []byte("one\n")}, {Name: "static/two.yaml", Data: []byte("two\n")}}
	require.NoError(t, writeDir(dir, files))
	assert.Equal(t, "one\n", string(must(os.ReadFile(filepath.Join(dir, "static", "a", "one.yaml")))))
	snap := takeSnapshot(t, filepath.Join(dir, "static"))
	assert.Len(t, snap, 2, "a and two.yaml, no temporary file: %v", snap)

	// A parent taken by a file refuses the set before anything changes.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "static", "b"), []byte("x"), 0o644))
	err := writeDir(dir, []generate.File{{Name: "static/two.yaml", Data: []byte("new\n")}, {Name: "static/b/three.yaml", Data: []byte("3\n")}})
	require.Error(t, err)
	assert.Equal(t, "write "+filepath.Join(dir, "static", "b", "three.yaml")+": "+filepath.Join(dir, "static", "b")+" is not a directory; nothing was written", err.Error())
	assert.Equal(t, "two\n", string(must(os.ReadFile(filepath.Join(dir, "static", "two.yaml")))))

	err = writeDir(dir, []generate.File{{Name: "../escape.yaml", Data: []byte("x\n")}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the name leaves the output directory")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestCompileStaticWebhookRefusesEveryResource(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "every.yaml")
	require.NoError(t, os.WriteFile(policy, []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: every
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["*"]
      apiVersions: ["*"]
      operations: ["CREATE"]
      resources: ["*"]
  validations:
  - expression: "true"
`), 0o644))
	_, stderr, code := run(t, "compile", "--backend", "static", "--static-webhook", "--url", "https://127.0.0.1:8443", "--namespace", "shop", "--policies", policy)
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, `policy "every" cannot go to a static webhook: its matchConstraints name every resource ("*")`)
}
