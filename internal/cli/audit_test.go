package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// auditKubeconfig writes a kubeconfig for server into dir.
func auditKubeconfig(t *testing.T, dir, server string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "token"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	path := filepath.Join(dir, "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// discoveryServer is an API server that serves discovery of pods only,
// or refuses every credential.
func discoveryServer(t *testing.T, unauthorized bool) *httptest.Server {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var body any
		switch {
		case unauthorized:
			w.WriteHeader(http.StatusUnauthorized)
			body = metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonUnauthorized, Code: 401, Message: "Unauthorized"}
		case r.URL.Path == "/api":
			body = metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
		case r.URL.Path == "/apis":
			body = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		case r.URL.Path == "/api/v1":
			body = metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
				APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"list"}}}}
		default:
			w.WriteHeader(http.StatusNotFound)
			body = metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: 404}
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestAuditBadInputWritesNothing: no reachable API server, refused
// credentials, a kind the API server does not serve, policies that do not
// compile: a clear error, exit 2, and nothing written to --out.
func TestAuditBadInputWritesNothing(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	dir := t.TempDir()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	widgets := filepath.Join(dir, "widgets.yaml")
	require.NoError(t, os.WriteFile(widgets, []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: widgets}
spec:
  matchConstraints: {resourceRules: [{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}]}
  validations: [{expression: "true"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: widgets}
spec: {policyName: widgets, validationActions: [Deny]}
`), 0o644))
	pods := fixtures + "admission/vap-and-binding.yaml"
	for name, tc := range map[string]struct {
		server, policies, want string
	}{
		"no API server":    {closed.URL, pods, "error: cannot reach the API server at " + closed.URL + ": discover the API server's resources: "},
		"refused token":    {discoveryServer(t, true).URL, pods, "error: the API server at %s refused the credentials (an expired or revoked token, a wrong certificate?): "},
		"kind not served":  {discoveryServer(t, false).URL, widgets, `error: not served: policy "widgets" matches widgets.example.com (v1), which the API server does not serve` + "\n"},
		"does not compile": {discoveryServer(t, false).URL, "testdata/bad/bad-cel.yaml", "error: policies do not compile:\ntestdata/bad/bad-cel.yaml:5:89: "},
		"apps not served":  {discoveryServer(t, false).URL, pods, `error: not served: policy "replica-limit" matches deployments.apps, statefulsets.apps (v1), which the API server does not serve` + "\n"},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "reports")
			stdout, stderr, code := run(t, "audit", "--kubeconfig", auditKubeconfig(t, t.TempDir(), tc.server), "-p", tc.policies, "--out", out)
			assert.Equal(t, ExitUsage, code, stderr)
			assert.Empty(t, stdout)
			want := strings.ReplaceAll(tc.want, "%s", tc.server)
			assert.True(t, strings.HasPrefix(stderr, want), "stderr: %s\nwant prefix: %s", stderr, want)
			_, err := os.Stat(out)
			assert.True(t, os.IsNotExist(err), "--out written: %v", err)
		})
	}
}

// TestAuditFlags refuses what cannot work before reading anything.
func TestAuditFlags(t *testing.T) {
	for args, want := range map[string]string{
		"-o yaml":                   `error: --output must be one of table, json, junit, openreports; got "yaml"` + "\n",
		"--report-max-bytes 100":    "error: --report-max-bytes 100: want 4096 or more\n",
		"--page-size 0":             "error: --page-size 0: want 1 or more objects\n",
		"--workers -1":              "error: --workers -1: want 0 (GOMAXPROCS) or more\n",
		"--kubeconfig /nonexistent": "error: --kubeconfig /nonexistent: stat /nonexistent: no such file or directory\n",
	} {
		t.Run(args, func(t *testing.T) {
			_, stderr, code := run(t, append([]string{"audit"}, strings.Fields(args)...)...)
			assert.Equal(t, ExitUsage, code)
			assert.Equal(t, want, stderr)
		})
	}
}

// TestServeAuditNeedsTheAPIServer: --audit-interval audits what the API
// server stores; offline it is refused.
func TestServeAuditNeedsTheAPIServer(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	tlsDir := t.TempDir()
	newCerts(t, tlsDir)
	_, stderr, code := run(t, "serve", "--policies", fixtures+"policies/policies.json", "--cert", filepath.Join(tlsDir, "tls.crt"),
		"--key", filepath.Join(tlsDir, "tls.key"), "--audit-interval", "1h")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: --audit-interval audits the objects the API server stores: it needs --kubeconfig, or to run in a pod, and not --offline\n", stderr)
}
