package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A policy directory laid out as kyverno/policies lays it out
// (artifacthub-pkg.yml beside the policy) is read: the files that hold no
// policy are skipped with a notice. Named explicitly, such a file is still
// an error.
func TestPolicyDirectoriesSkipFilesWithoutPolicies(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, fixtures+"kyverno/disallow-host-path/policy.yaml", filepath.Join(dir, "disallow-host-path.yaml"))
	copyFile(t, "testdata/migrate/mixed/artifacthub-pkg.yml", filepath.Join(dir, "artifacthub-pkg.yml"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [disallow-host-path.yaml]\n"), 0o644))
	notices := "notice: skipped " + dir + "/artifacthub-pkg.yml: not a policy file (no kind and no policies list: an Artifact Hub package, Helm values or chart file)\n" +
		"notice: skipped " + dir + "/kustomization.yaml: not a policy file (a kustomize file, kustomize.config.k8s.io/v1beta1 Kustomization)\n"

	out, stderr, code := run(t, "test", "--policies", dir, fixtures+"kyverno/disallow-host-path/.kyverno-test/resources.yaml")
	assert.Equal(t, ExitFailed, code, stderr)
	assert.Contains(t, out, "DENIED Pod default/bad-pod\n")
	assert.Equal(t, notices, stderr)

	out, stderr, code = run(t, "compile", "--backend", "vap", "--policies", dir)
	assert.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "name: disallow-host-path.host-path\n")
	assert.Equal(t, notices, stderr)

	_, stderr, code = run(t, "compile", "--backend", "vap", "--policies", filepath.Join(dir, "artifacthub-pkg.yml"))
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, `artifacthub-pkg.yml:1:1: name: unknown field "name" in a policy file`)
}

// A template with Rego and CEL is judged by its CEL alone, as Gatekeeper
// judges it with its CEL driver on; compile, test and verify say so.
func TestGatekeeperTemplateWithRegoAndCELIsNoted(t *testing.T) {
	dir := verifyData + "gatekeeper-rego-and-cel/"
	text := "policy \"k8sblockloadbalancer\" has Rego too: admitc judges by its K8sNativeValidation CEL alone, as Gatekeeper does with its CEL driver on (--enable-k8s-native-validation, the default); " +
		"the Rego, which Gatekeeper runs instead when that flag is off, is not evaluated, so nothing here checks that it agrees with the CEL\n"
	note := dir + "template.yaml:1:1: note: " + text

	out, stderr, code := run(t, "verify", dir)
	assert.Equal(t, ExitOK, code, out)
	assert.Contains(t, out, "2 expected result(s): 2 passed, 0 failed")
	assert.Equal(t, "note: "+dir+"template.yaml:1:1: "+text, stderr)

	_, stderr, code = run(t, "test", "--policies", dir+"template.yaml", "--policies", dir+"constraint.yaml", dir+"samples/load-balancer.yaml")
	assert.Equal(t, ExitFailed, code)
	assert.Equal(t, note, stderr)

	_, stderr, code = run(t, "compile", "--backend", "vap", "--policies", dir+"template.yaml", "--policies", dir+"constraint.yaml")
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, note, stderr)

	rows, _, _, _ := verifyJSON(t, fixtures+"gatekeeper/privileged-containers")
	assert.NotEmpty(t, rows)
	_, stderr, _ = run(t, "verify", fixtures+"gatekeeper/privileged-containers")
	assert.Empty(t, stderr, "a CEL-only template has no note")
}
