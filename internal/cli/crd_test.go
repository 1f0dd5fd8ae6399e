//go:build !serveonly

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The CRD case of the golden corpus: ClusterPolicies on cert-manager's
// Certificate and Flux's HelmRelease, their CRDs, resources and Kyverno test.
const (
	crdCase     = "../../golden/kyverno-crd/"
	crdPolicy   = crdCase + "policy.yaml"
	crdFixtures = "../../golden/testdata/crds/"
)

// unresolvedCertificate is the vap backend's refusal of the Certificate
// kind when no CRD defines it.
const unresolvedCertificate = crdPolicy + ":23:13: spec.rules[0].match.any[0].resources.kinds[0]: kind Certificate is not a built-in kind and no CRD given defines it: " +
	"an admission policy or webhook must name the resources that serve it (API group, versions, plural), which only its CustomResourceDefinition says; " +
	"pass --crd with that CRD (its YAML file, a directory of them, or kubectl get crd NAME -o yaml), or keep the policy under Kyverno (the ClusterPolicy as it is, or --backend kyverno-cel)"

func TestCompileWithoutTheCRDRefusesTheKindAtItsPlace(t *testing.T) {
	_, stderr, code := run(t, "compile", "--policies", crdPolicy, "--backend", "vap", "--namespace", "shop", "--crd", crdFixtures+"flux-helmrelease.yaml")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: cannot compile:\n"+unresolvedCertificate+"\n", stderr, "the HelmRelease CRD is given, the Certificate one is not")

	_, stderr, code = run(t, "webhook-config", "--policies", crdPolicy, "--namespace", "shop", "--crd", crdFixtures+"flux-helmrelease.yaml")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: cannot compile:\n"+unresolvedCertificate+"\n", stderr)

	out, stderr, code := run(t, "compile", "--policies", crdPolicy, "--backend", "kyverno-cel", "--namespace", "shop")
	assert.Equal(t, ExitOK, code, "Kyverno matches its policies by kind: %s", stderr)
	assert.Contains(t, out, "kind: ValidatingPolicy")
}

func TestCompileWithTheCRDNamesItsResources(t *testing.T) {
	out, stderr, code := run(t, "vap", "--policies", crdPolicy, "--namespace", "shop", "--crd", crdFixtures+"cert-manager-certificate.yaml,"+crdFixtures+"flux-helmrelease.yaml")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, `    resourceRules:
    - apiGroups:
      - cert-manager.io
      apiVersions:
      - v1
      operations:
      - CREATE
      - UPDATE
      - CONNECT
      resources:
      - certificates
      scope: Namespaced
`)
	assert.Contains(t, out, `  - expression: object.?spec.?privateKey.hasValue() && object.spec.privateKey.?algorithm.orValue("")
      == "ECDSA" && object.spec.privateKey.?rotationPolicy.orValue("") == "Always"`, "typed against the CRD's schema")
	assert.NotContains(t, out, `"*"`)
}

func TestTestAndVerifyJudgeCustomResourcesWithOrWithoutTheCRD(t *testing.T) {
	without, _, code := run(t, "test", "--policies", crdPolicy, crdCase+"resources.yaml")
	assert.Equal(t, ExitFailed, code)
	with, stderr, code := run(t, "test", "--policies", crdPolicy, "--crd", crdFixtures, crdCase+"resources.yaml")
	assert.Equal(t, ExitFailed, code, stderr)
	assert.Equal(t, without, with, "the typed translation decides as the dynamic one")
	assert.Contains(t, with, "DENIED Certificate shop/web-never-rotated\n")
	assert.Contains(t, with, "6 object(s): 3 allowed, 3 denied, 0 with warnings\n")

	for _, args := range [][]string{{"verify", crdCase}, {"verify", "--crd", crdFixtures, crdCase}} {
		out, stderr, code := run(t, args...)
		assert.Equal(t, ExitOK, code, "%v: %s%s", args, out, stderr)
		assert.Contains(t, out, "9 expected result(s): 9 passed, 0 failed, 0 unsupported, 0 error(s)\n")
	}
}

func TestMigrateWithoutTheCRDWritesNoAdmissionPolicyForIt(t *testing.T) {
	_, report, code := run(t, "migrate", crdPolicy)
	assert.Equal(t, ExitOK, code, report)
	assert.Contains(t, report, "  no admission policy: cert-manager-rotate-private-keys.rotate-private-key: policy.yaml:23:13: spec.rules[0].match.any[0].resources.kinds[0]: kind Certificate is not a built-in kind")

	out, report, code := run(t, "migrate", "--crd", crdFixtures, crdPolicy)
	assert.Equal(t, ExitOK, code, report)
	assert.NotContains(t, report, "no admission policy")
	assert.Contains(t, out, "      - cert-manager.io\n")
}

func TestCRDFlagRefusesWhatIsNotACRD(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		return p
	}
	cert, err := os.ReadFile(crdFixtures + "cert-manager-certificate.yaml")
	require.NoError(t, err)
	v1beta1 := write("v1beta1.yaml", strings.Replace(string(cert), "apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1", 1))
	for _, tc := range []struct {
		crd, want string
	}{
		{crdPolicy, "error: --crd: " + crdPolicy + " holds no apiextensions.k8s.io/v1 CustomResourceDefinition\n"},
		{v1beta1, "error: --crd: " + v1beta1 + ", document 1: a CustomResourceDefinition of apiextensions.k8s.io/v1beta1: admitc reads apiextensions.k8s.io/v1 (the API server serves no other since Kubernetes 1.22)\n"},
		{crdFixtures + "," + crdFixtures + "cert-manager-certificate.yaml", "error: --crd: CustomResourceDefinition certificates.cert-manager.io is given twice: in " +
			crdFixtures + "cert-manager-certificate.yaml and in " + crdFixtures + "cert-manager-certificate.yaml\n"},
		{filepath.Join(dir, "missing.yaml"), "error: --crd: read CRD file: stat " + filepath.Join(dir, "missing.yaml") + ": no such file or directory\n"},
	} {
		_, stderr, code := run(t, "compile", "--policies", crdPolicy, "--backend", "vap", "--namespace", "shop", "--crd", tc.crd)
		assert.Equal(t, ExitUsage, code)
		assert.Equal(t, tc.want, stderr)
	}
}

func TestCRDFlagReadsKubectlLists(t *testing.T) {
	var items []string
	for _, name := range []string{"cert-manager-certificate.yaml", "flux-helmrelease.yaml"} {
		data, err := os.ReadFile(crdFixtures + name)
		require.NoError(t, err)
		var kept []string
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if !strings.HasPrefix(line, "#") {
				kept = append(kept, "  "+line)
			}
		}
		kept[0] = "- " + strings.TrimSpace(kept[0])
		items = append(items, strings.Join(kept, "\n"))
	}
	list := filepath.Join(t.TempDir(), "crds.yaml")
	require.NoError(t, os.WriteFile(list, []byte("apiVersion: v1\nkind: List\nitems:\n"+strings.Join(items, "\n")+"\nmetadata:\n  resourceVersion: \"\"\n"), 0o644))
	out, stderr, code := run(t, "vap", "--policies", crdPolicy, "--namespace", "shop", "--crd", list)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "      - helmreleases\n")
}
