package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const deletes = "testdata/delete/"

// `admitc test --operation DELETE` judges each manifest as the object being
// deleted, as the API server sends a DELETE: the object as oldObject,
// request.object null, the namespace the object's. A deny rule (Kyverno's
// validate.deny, a ValidatingAdmissionPolicy) that matches DELETE blocks
// it; objects it does not select are admitted.
func TestTestOperationDelete(t *testing.T) {
	cases := map[string]struct {
		args []string
		out  string
		code int
	}{
		"Kyverno deny, protected namespace": {
			[]string{"-p", deletes + "protect-namespaces.yaml", deletes + "namespace-protected.yaml"},
			"DENIED Namespace payments\n" +
				"  deny [protect-namespaces.block-protected-namespace-deletes] Namespace payments is protected: remove its protected label before deleting it.\n" +
				"1 object(s): 0 allowed, 1 denied, 0 with warnings\n",
			ExitFailed},
		"Kyverno deny, namespace without the label": {
			[]string{"-p", deletes + "protect-namespaces.yaml", deletes + "namespace-scratch.yaml"},
			"ALLOWED Namespace scratch\n1 object(s): 1 allowed, 0 denied, 0 with warnings\n",
			ExitOK},
		"VAP on DELETE, protected configmap in its own namespace": {
			[]string{"-p", deletes + "protect-configmaps-vap.yaml", deletes + "configmap-protected.yaml"},
			"DENIED ConfigMap shop/ca-bundle\n" +
				"  deny [protect-configmaps] ConfigMap ca-bundle is protected\n" +
				"1 object(s): 0 allowed, 1 denied, 0 with warnings\n",
			ExitFailed},
		"VAP on DELETE, configmap in --namespace": {
			[]string{"-p", deletes + "protect-configmaps-vap.yaml", "-n", "shop", deletes + "configmap-scratch.yaml"},
			"ALLOWED ConfigMap shop/scratch\n1 object(s): 1 allowed, 0 denied, 0 with warnings\n",
			ExitOK},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, stderr, code := run(t, append([]string{"test", "--operation", "DELETE"}, tc.args...)...)
			assert.Equal(t, tc.code, code, stderr)
			assert.Equal(t, tc.out, out)
		})
	}
}

// A CREATE of the same objects is not judged by rules on DELETE: the
// Kyverno rule's deny condition does not hold, the VAP does not match.
func TestTestDeleteRulesLeaveCreatesAlone(t *testing.T) {
	out, stderr, code := run(t, "test", "-p", deletes+"protect-namespaces.yaml", "-p", deletes+"protect-configmaps-vap.yaml",
		deletes+"namespace-protected.yaml", deletes+"configmap-protected.yaml")
	assert.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "ALLOWED Namespace payments\nALLOWED ConfigMap shop/ca-bundle\n2 object(s): 2 allowed, 0 denied, 0 with warnings\n", out)
}

// --old belongs to UPDATE: with DELETE the manifests are the objects being
// deleted.
func TestTestDeleteRefusesOld(t *testing.T) {
	_, stderr, code := run(t, "test", "--operation", "DELETE", "--old", deletes+"namespace-protected.yaml", deletes+"namespace-protected.yaml")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: --old is for UPDATE; with --operation DELETE each manifest is the object being deleted (the API server's oldObject)\n", stderr)
}
