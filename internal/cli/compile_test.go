package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompileBuiltinToStdoutIsStable(t *testing.T) {
	first, stderr, code := run(t, "compile")
	require.Equal(t, ExitOK, code, stderr)
	second, _, _ := run(t, "compile")
	assert.Equal(t, first, second)
	assert.Contains(t, first, "kind: ValidatingAdmissionPolicy\n")
	assert.Contains(t, first, "kind: MutatingAdmissionPolicy\n")
	assert.Contains(t, first, "kind: ValidatingWebhookConfiguration\n")
	assert.Contains(t, first, "        - shop\n")
}

func TestCompileOutAndCheck(t *testing.T) {
	dir := t.TempDir()
	args := []string{"compile", "--policies", fixtures + "policies/labels-policy.json", "--namespace", "shop", "--ca-bundle", "../../golden/testdata/ca.crt"}
	_, stderr, code := run(t, append(args, "--out", dir)...)
	require.Equal(t, ExitOK, code, stderr)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"kyverno.yaml", "map.yaml", "webhook.yaml"}, names, "no vap.yaml: the set has no validating policy")

	out, stderr, code := run(t, append(args, "--check", dir)...)
	assert.Equal(t, ExitOK, code, stderr)
	assert.Empty(t, out)

	// A hand edit is caught, with a unified diff and exit 1.
	path := filepath.Join(dir, "map.yaml")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(string(data)+"# edited\n"), 0o644))
	out, stderr, code = run(t, append(args, "--check", dir)...)
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, out, "--- "+path+" (checked in)\n+++ "+path+" (generated)\n")
	assert.Contains(t, out, "-# edited\n")
	assert.Equal(t, dir+" is out of date: run the same command with --out "+dir+" and commit the result\n", stderr)
}

func TestCompileRefusesWhatItCannotExpress(t *testing.T) {
	_, stderr, code := run(t, "compile", "--policies", fixtures+"policies/labels-policy.json", "--backend", "map", "--kube-version", "1.33", "--namespace", "shop")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: cannot compile:\n"+fixtures+"policies/labels-policy.json:2:3: policies[0]: MutatingAdmissionPolicy needs Kubernetes 1.34 or newer (beta, on by default), --kube-version is 1.33; use the webhook backend for older clusters\n", stderr)

	_, stderr, code = run(t, "compile", "--backend", "kyverno-typo")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "error: unknown backend kyverno-typo (backends: all, vap, map, webhook")

	_, stderr, code = run(t, "compile", "--kube-version", "one")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "error: --kube-version:")
}

func TestShortcuts(t *testing.T) {
	out, stderr, code := run(t, "vap", "--policies", fixtures+"policies/cel-policies.json", "--namespace", "shop")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "  name: cc-admission-digest\n")
	assert.NotContains(t, out, "WebhookConfiguration")

	out, stderr, code = run(t, "webhook-config", "--name", "miniadmit", "--service", "miniadmit", "--service-namespace", "admission-system",
		"--namespace", "shop", "--ca-bundle", "../../golden/testdata/ca.crt", "--failure-policy", "Fail", "--timeout", "3", "--deployment=false")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "  name: validate.miniadmit.admitc.dev\n")
	assert.Contains(t, out, "  failurePolicy: Fail\n")
	assert.Contains(t, out, "  timeoutSeconds: 3\n")
	assert.NotContains(t, out, "kind: Deployment", "--deployment=false prints configurations only")

	_, stderr, code = run(t, "webhook-config", "--namespace", "shop", "--ca-bundle", fixtures+"manifests/good.json")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: cannot compile:\n--ca-bundle: not a PEM certificate\n", stderr)
}

// TestCompileRefusesKyvernoLibrariesForTheAPIServer: a ValidatingPolicy
// that calls Kyverno's image library has no ValidatingAdmissionPolicy
// equivalent; compile says where and why (exit 2) and the webhook backend,
// which runs Kyverno's environment, takes it.
func TestCompileRefusesKyvernoLibrariesForTheAPIServer(t *testing.T) {
	policy := "../../examples/kyverno/vpol-restrict-image-registries/policy.yaml"
	_, stderr, code := run(t, "compile", "--backend", "vap", "--policies", policy)
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, policy+`:1:1: validating policy "vpol-restrict-image-registries" cannot be expressed by the selected backends (vap: Kyverno's image library (parseImageReference) at policy.yaml:33:17 (spec.validations[0].expression) cannot be written for the API server: undeclared reference to 'parseImageReference' in the API server's CEL environment (the webhook backend runs it as written: admitc serve evaluates it in Kyverno's CEL environment))`)

	out, stderr, code := run(t, "compile", "--backend", "webhook", "--namespace", "shop", "--ca-bundle", "../../golden/testdata/ca.crt", "--policies", policy)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "kind: ValidatingWebhookConfiguration\n")

	// orValue on a value that is not optional is rewritten, not refused.
	out, stderr, code = run(t, "compile", "--backend", "vap", "--policies", "../../examples/kyverno/vpol-readonly-volume-mounts/policy.yaml")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "(type(c.volumeMounts) == type(optional.none()) ? (c.volumeMounts).orValue([]) : (c.volumeMounts))")
	assert.Contains(t, out, "failurePolicy: Fail\n", "a validation error fails a ValidatingPolicy whatever its failurePolicy")
}

// TestWebhookGrantsWhatKyvernoLibrariesRead: the emitted Deployment's
// service account may read what a ValidatingPolicy reads through Kyverno's
// resource library (a list across namespaces: the ClusterRole), and a
// policy the Deployment could not serve (globalContext) is refused with
// where and why.
func TestWebhookGrantsWhatKyvernoLibrariesRead(t *testing.T) {
	out, stderr, code := run(t, "compile", "--backend", "webhook", "--namespace", "shop", "--ca-bundle", "../../golden/testdata/ca.crt",
		"--policies", "../../examples/kyverno/vpol-cluster-lookups/policy.yaml")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "kind: ClusterRole\nmetadata:\n  labels:\n    app.kubernetes.io/managed-by: admitc\n    app.kubernetes.io/name: admitc\n  name: admitc\nrules:\n- apiGroups:\n  - \"\"\n  resources:\n  - namespaces\n  verbs:\n  - get\n  - list\n  - watch\n- apiGroups:\n  - networking.k8s.io\n  resources:\n  - ingresses\n  verbs:\n  - list\n---\n")

	policy := "../../examples/kyverno/vpol-tenant-replica-limits/policy.yaml"
	_, stderr, code = run(t, "compile", "--backend", "webhook", "--namespace", "shop", "--ca-bundle", "../../golden/testdata/ca.crt", "--policies", policy)
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "webhook: policy.yaml:27:17: spec.variables[1].expression: it reads Kyverno's globalContext, whose GlobalContextEntry caches admitc serve does not keep")
}
