package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run executes admitc with args and returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, args)
	return out.String(), errOut.String(), code
}

const fixtures = "../../examples/"

func TestTestExampleManifests(t *testing.T) {
	out, stderr, code := run(t, "test", fixtures+"manifests")
	assert.Equal(t, ExitFailed, code, stderr)
	for _, want := range []string{
		// The API server defaults a Pod's requests to its limits (memory 64Mi here): only cpu is left to add.
		"ALLOWED Pod default/good\n  patch add /spec/containers/0/resources/requests/cpu \"100m\" (default-requests)\n",
		"DENIED Pod default/lookalike-registry\n",
		"  deny [allowed-registries] image \"registry.k8s.io.evil.example/pause:3.10@sha256:4f7a9c0e1b2d3c4e5f60718293a4b5c6d7e8f90112233445566778899aabbccd\" in container \"pause\" (spec.containers[0].image) resolves to registry.k8s.io.evil.example/pause, which is not under an allowed registry (registry.k8s.io, docker.io/library)\n",
		"ALLOWED Pod default/tag-only\n",
		"  warn+audit [require-digest] image \"docker.io/library/nginx:1.30-alpine\" in container \"web\" is not pinned by digest (@sha256:...)\n",
		"DENIED Deployment default/deployment-privileged\n",
		"  deny [disallow-privileged] container \"web\" is privileged (spec.template.spec.containers[0].securityContext.privileged)\n",
		// The API server's object has resources: {}.
		"ALLOWED Pod default/no-limit\n  patch add /spec/containers/0/resources/requests {\"cpu\":\"100m\",\"memory\":\"128Mi\"} (default-requests)\n",
		"11 object(s): 5 allowed, 6 denied, 4 with warnings\n",
	} {
		assert.Contains(t, out, want)
	}
}

func TestTestAllAdmittedExitsZero(t *testing.T) {
	out, _, code := run(t, "test", fixtures+"manifests/good.json", fixtures+"manifests/deployment-good.json")
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, "ALLOWED Pod default/good\n"+
		"  patch add /spec/containers/0/resources/requests/cpu \"100m\" (default-requests)\n"+
		"ALLOWED Deployment default/deployment-good\n"+
		"  patch add /spec/template/spec/containers/0/resources/requests {\"cpu\":\"100m\",\"memory\":\"64Mi\"} (default-requests)\n"+
		"2 object(s): 2 allowed, 0 denied, 0 with warnings\n", out)
}

func TestTestJSONOutput(t *testing.T) {
	out, _, code := run(t, "test", "-o", "json", "--namespace", "shop", fixtures+"manifests/untrusted-registry.json")
	require.Equal(t, ExitFailed, code)
	var doc struct {
		Results []struct {
			Namespace        string            `json:"namespace"`
			Allowed          bool              `json:"allowed"`
			Warnings         []string          `json:"warnings"`
			AuditAnnotations map[string]string `json:"auditAnnotations"`
			Violations       []struct {
				Policy  string   `json:"policy"`
				Actions []string `json:"actions"`
			} `json:"violations"`
		} `json:"results"`
		Summary map[string]int `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Results, 1)
	r := doc.Results[0]
	assert.Equal(t, "shop", r.Namespace)
	assert.False(t, r.Allowed)
	assert.Equal(t, []string{`[require-digest] image "quay.io/evil/miner:latest" in container "miner" is not pinned by digest (@sha256:...)`}, r.Warnings)
	assert.Equal(t, `["image \"quay.io/evil/miner:latest\" in container \"miner\" is not pinned by digest (@sha256:...)"]`, r.AuditAnnotations["require-digest"])
	assert.Equal(t, map[string]int{"objects": 1, "allowed": 0, "denied": 1, "withWarnings": 1}, doc.Summary)
}

func TestTestPolicyErrors(t *testing.T) {
	const bad = "testdata/bad/"
	cases := map[string]struct {
		files []string
		want  string
	}{
		"unknown type":   {[]string{"unknown-type.yaml"}, bad + `unknown-type.yaml:3:11: policies[0].type: unknown policy type "disallow-root" (known types: default-requests, required-labels, allowed-registries, image-digest, disallow-privileged, run-as-non-root, memory-limit, no-host-path, add-labels, cel)`},
		"unknown field":  {[]string{"unknown-field.yaml"}, bad + `unknown-field.yaml:5:5: policies[0].lables: unknown field "lables" in a policy of type "required-labels" (known fields: actions, failurePolicy, labels, match, name, type)`},
		"deny with warn": {[]string{"deny-warn.json"}, bad + `deny-warn.json:2:57: policies[0].actions: Deny and Warn together report the same failure twice; ValidatingAdmissionPolicyBinding rejects that combination (use [Deny] or [Warn, Audit])`},
		"duplicate name": {[]string{"duplicate-a.yaml", "duplicate-b.yaml"}, bad + `duplicate-b.yaml:4:11: policies[1].name: policy name "privileged" is already used at ` + bad + `duplicate-a.yaml:2:11; names must be unique across all policy files`},
		"bad CEL": {[]string{"bad-cel.yaml"}, bad + `bad-cel.yaml:5:89: policies[0].validations[0].expression: Syntax error: missing ')' at '<EOF>'` + "\n" +
			` |       - expression: "object.spec.containers.all(c, c.securityContext.privileged == false"` + "\n" +
			` | ........................................................................................^`},
		"undeclared variable": {[]string{"undeclared-variable.yaml"}, bad + `undeclared-variable.yaml:8:30: policies[0].validations[0].expression: undefined field 'containres'` + "\n" +
			` |       - expression: variables.containres.all(c, !has(c.securityContext))` + "\n" +
			` | .............................^`},
		"undeclared reference in a block scalar": {[]string{"undeclared-reference.yaml"}, bad + `undeclared-reference.yaml:6:11: policies[0].validations[0].expression: undeclared reference to 'spec'` + "\n" +
			` |           spec.containers.size() > 0` + "\n" +
			` | ..........^`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := []string{"test"}
			for _, f := range tc.files {
				args = append(args, "--policies", bad+f)
			}
			out, stderr, code := run(t, append(args, fixtures+"manifests/good.json")...)
			assert.Equal(t, ExitUsage, code)
			assert.Empty(t, out)
			assert.Equal(t, "error: policies do not compile:\n"+tc.want+"\n", stderr)
		})
	}
}

func TestTestUnreadableInput(t *testing.T) {
	_, stderr, code := run(t, "test", "does-not-exist.json")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: read manifest: stat does-not-exist.json: no such file or directory\n", stderr)

	_, stderr, code = run(t, "test", "testdata/bad/deny-warn.json")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "testdata/bad/deny-warn.json: object is missing apiVersion, kind, metadata.name")

	_, stderr, code = run(t, "test", "-o", "yaml", fixtures+"manifests/good.json")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: --output must be text or json, got \"yaml\"\n", stderr)
}

func TestCEL(t *testing.T) {
	out, _, code := run(t, "cel", "object.spec.containers.map(c, c.image)", "--object", fixtures+"manifests/tag-only.json")
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, "[\n  \"docker.io/library/nginx:1.30-alpine\"\n]\n", out)

	out, stderr, code := run(t, "cel", "object.spec.containers[0].securityContext.privileged", "--object", fixtures+"manifests/good.json")
	assert.Equal(t, ExitFailed, code)
	assert.Empty(t, out)
	assert.Equal(t, "error: no such key: securityContext\n", stderr)

	out, _, code = run(t, "cel", "object.spec.containers.all(c, !has(c.securityContext) || !c.securityContext.privileged)", "--object", fixtures+"manifests/good.json")
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, "true\n", out)

	_, stderr, code = run(t, "cel", "spec.containers", "--object", fixtures+"manifests/good.json")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "ERROR: <input>:1:1: undeclared reference to 'spec' (in container '')\n | spec.containers\n | ^\n", stderr)

	out, _, code = run(t, "cel", "params.data.registries.split(',')", "--object", fixtures+"manifests/good.json", "--params", fixtures+"params/registries-hub.json")
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, "[\n  \"docker.io/library\",\n  \" registry.k8s.io\"\n]\n", out)
}

func TestVersion(t *testing.T) {
	out, _, code := run(t, "version", "-o", "json")
	require.Equal(t, ExitOK, code)
	var info struct{ Version, Image string }
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	assert.Equal(t, "v0.1.0", info.Version)
	assert.Equal(t, "ghcr.io/admitc/admitc:v0.1.0", info.Image)
	_, stderr, code := run(t, "version", "-o", "xml")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "use text, json or yaml")
}

// TestEngineFlag: --engine reference decides the examples as the default
// fast path does, and an unknown engine is a usage error naming both.
func TestEngineFlag(t *testing.T) {
	fast, _, fastCode := run(t, "test", "-o", "json", fixtures+"manifests")
	ref, _, refCode := run(t, "test", "--engine", "reference", "-o", "json", fixtures+"manifests")
	assert.Equal(t, ExitFailed, fastCode)
	assert.Equal(t, fastCode, refCode)
	assert.JSONEq(t, ref, fast)
	_, stderr, code := run(t, "test", "--engine", "turbo", fixtures+"manifests")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, `unknown evaluation path "turbo" (want "fast" or "reference")`)
}
