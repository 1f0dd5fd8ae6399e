//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The namespaces and objects of TestWebhookSeesTheCluster: requests go to
// informersNamespace, the parameter object lives in informersParams, the
// webhook runs as the ServiceAccount informersWebhook emitted by the
// webhook backend.
const (
	informersNamespace = "informers-web"
	informersParams    = "informers-params"
	informersWebhook   = "informers"
	informersLimit     = "informers-limit"
)

// informersPolicies are two imported policies: one bound by
// namespaceSelector env: prod, one reading a ConfigMap by paramRef
// (parameterNotFoundAction Deny), both scoped to Deployments.
const informersPolicies = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: informers-prod-replicas
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= 2"
    messageExpression: "'prod namespaces run at most 2 replicas, got ' + string(object.spec.replicas)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: informers-prod-replicas
spec:
  policyName: informers-prod-replicas
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {env: prod}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: informers-replica-limit
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
    messageExpression: "'replicas must be at most ' + params.data.maxReplicas + ', got ' + string(object.spec.replicas)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: informers-replica-limit
spec:
  policyName: informers-replica-limit
  validationActions: [Deny]
  paramRef: {name: informers-limit, namespace: informers-params, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: informers-web}
`

// verdict is a decision on one request: allowed, else the denial messages
// without the name of the policy and binding that gave them, sorted.
type verdict struct {
	Allowed  bool
	Messages []string
}

func allowed() verdict              { return verdict{Allowed: true} }
func denied(msgs ...string) verdict { slices.Sort(msgs); return verdict{Messages: msgs} }

// TestWebhookSeesTheCluster runs `admitc serve --kubeconfig` with the token
// of the ServiceAccount the webhook backend emits, and checks that its
// decisions follow the cluster (a namespace labelled, a parameter object
// edited and deleted) within seconds and equal, each time, the API
// server's for the same policies compiled to ValidatingAdmissionPolicies;
// that the emitted RBAC is sufficient and minimal; and that a webhook cut
// off from its API server keeps deciding from its last synced state.
func TestWebhookSeesTheCluster(t *testing.T) {
	deleteManaged(t)
	defer deleteManaged(t)
	policies := filepath.Join(t.TempDir(), "informers.yaml")
	require.NoError(t, os.WriteFile(policies, []byte(informersPolicies), 0o644))
	informersSetup(t)
	defer informersCleanup(t)

	rbac := emittedRBAC(t, policies)
	apply(t, rbac["ServiceAccount"], false)
	token := serviceAccountToken(t, informersWebhook)
	proxy := startProxy(t, kc.server)
	w := startClusterWebhook(t, policies, writeTokenKubeconfig(t, proxy.url, token))
	rbacIsSufficient(t, w, rbac)
	checkMinimalRBAC(t, token)

	apply(t, compiledVAPs(t, policies), false)
	defer deleteInformerPolicies(t)
	deployment := decisionsFollowTheCluster(t, w)

	// The same decision through the API server, with the webhook as the
	// only policy engine.
	deleteInformerPolicies(t)
	w.registerFor(t, policies)
	var a answer
	eventually(t, "the API server to call the webhook", func() bool {
		a = dryRunCreate(t, deployment, informersNamespace)
		return a.err != nil && strings.Contains(a.err.Error(), "admission webhook")
	})
	assert.Contains(t, a.err.Error(), "admission webhook \"validate.informers.admitc.dev\" denied the request: [informers-replica-limit] "+paramNotFound.Messages[0])

	cutOffKeepsDeciding(t, w, proxy, deployment)
	backOnlyWhenSynced(t, w, proxy, deployment)
	for _, line := range bytes.Split(w.logBytes(t), []byte("\n")) {
		if bytes.Contains(line, []byte(`"phase":"cluster"`)) {
			t.Logf("webhook log: %s", line)
		}
		assert.True(t, len(line) == 0 || json.Valid(line), "every log line is JSON: %s", line)
	}
}

var paramNotFound = denied("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction")

// rbacIsSufficient: without the emitted roles the caches cannot list and
// the webhook is not ready; once they are bound the caches sync.
func rbacIsSufficient(t *testing.T, w *clusterWebhook, rbac map[string]string) {
	assert.Equal(t, http.StatusServiceUnavailable, w.get(t, "/readyz").code)
	eventually(t, "the webhook to say it cannot list", func() bool { return bytes.Contains(w.logBytes(t), []byte("cannot list or watch")) })
	applyRoles(t, rbac)
	eventuallyWithin(t, 60*time.Second, "the informers to sync with the emitted RBAC", func() bool { return w.get(t, "/readyz").code == http.StatusOK })
	metrics := w.get(t, "/metrics").body
	assert.Contains(t, metrics, `admitc_cluster_cache_synced{kind="v1/ConfigMap"} 1`)
	assert.Contains(t, metrics, `admitc_cluster_cache_synced{kind="v1/Namespace"} 1`)
}

// decisionsFollowTheCluster changes the cluster one step at a time and
// checks, after each, that the webhook's next decision on a 3-replica
// Deployment follows within seconds and equals the API server's for the
// policies compiled to VAPs. It returns the Deployment.
func decisionsFollowTheCluster(t *testing.T, w *clusterWebhook) *unstructured.Unstructured {
	deployment := manifest(t, admissionDir+"deployment-5.yaml")
	require.NoError(t, unstructured.SetNestedField(deployment.Object, int64(3), "spec", "replicas"))
	big := manifest(t, admissionDir+"deployment-20.yaml")
	eventually(t, "the policies to take effect in the API server", func() bool {
		return assert.ObjectsAreEqual(denied("replicas must be at most 5, got 20"), apiServerVerdict(dryRunCreate(t, big, informersNamespace)))
	})
	assert.Equal(t, denied("replicas must be at most 5, got 20"), w.decide(t, big))

	ctx := context.Background()
	configMaps := kc.client.CoreV1().ConfigMaps(informersParams)
	step := func(what string, change func(), want verdict) {
		t.Helper()
		start := time.Now()
		change()
		var got verdict
		eventually(t, what+": the webhook's decision", func() bool { got = w.decide(t, deployment); return assert.ObjectsAreEqual(want, got) })
		took := time.Since(start)
		var server verdict
		eventually(t, what+": the API server's decision", func() bool {
			server = apiServerVerdict(dryRunCreate(t, deployment, informersNamespace))
			return assert.ObjectsAreEqual(want, server)
		})
		assert.Equal(t, server, w.decide(t, deployment), "%s: the webhook and the API server disagree", what)
		t.Logf("%s: webhook followed in %s; both say %+v", what, took.Round(time.Millisecond), got)
	}
	step("as created", func() {}, allowed())
	step("namespace labelled env: prod", func() { labelNamespace(t, "prod") }, denied("prod namespaces run at most 2 replicas, got 3"))
	step("label removed", func() { labelNamespace(t, nil) }, allowed())
	step("parameter object edited", func() {
		_, err := configMaps.Patch(ctx, informersLimit, types.MergePatchType, []byte(`{"data":{"maxReplicas":"2"}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}, denied("replicas must be at most 2, got 3"))
	step("parameter object deleted", func() { require.NoError(t, configMaps.Delete(ctx, informersLimit, metav1.DeleteOptions{})) }, paramNotFound)
	return deployment
}

// labelNamespace sets the request namespace's env label (nil removes it).
func labelNamespace(t *testing.T, env any) {
	patch := mustJSON(t, map[string]any{"metadata": map[string]any{"labels": map[string]any{"env": env}}})
	_, err := kc.client.CoreV1().Namespaces().Patch(context.Background(), informersNamespace, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
}

// cutOffKeepsDeciding: cut off from its API server, the webhook keeps
// deciding from what it last saw (a namespace labelled meanwhile is not
// seen), says so in a metric and a log line, stays ready and does not fail
// closed.
func cutOffKeepsDeciding(t *testing.T, w *clusterWebhook, proxy *tcpProxy, deployment *unstructured.Unstructured) {
	proxy.cut()
	eventually(t, "the webhook to notice", func() bool {
		return strings.Contains(w.get(t, "/metrics").body, "admitc_cluster_api_reachable 0")
	})
	assert.Contains(t, string(w.logBytes(t)), `"msg":"API server unreachable; deciding from the last synced state"`)
	assert.Equal(t, http.StatusOK, w.get(t, "/readyz").code)
	labelNamespace(t, "prod")
	a := dryRunCreate(t, deployment, informersNamespace)
	require.Error(t, a.err)
	assert.Contains(t, a.err.Error(), paramNotFound.Messages[0], "the last synced state decides")
	assert.NotContains(t, a.err.Error(), "prod namespaces")
	assert.Equal(t, paramNotFound, w.decide(t, deployment))
	t.Logf("API server with the webhook cut off from it: %v", a.err)
}

// backOnlyWhenSynced: the API server reachable again, the webhook says it
// is ready, or that its caches are synced, only once its decisions see
// what changed while it was cut off (the namespace labelled env: prod):
// reachability alone is not sync. It logs how long each took.
func backOnlyWhenSynced(t *testing.T, w *clusterWebhook, proxy *tcpProxy, deployment *unstructured.Unstructured) {
	fresh := denied(paramNotFound.Messages[0], "prod namespaces run at most 2 replicas, got 3")
	time.Sleep(8 * time.Second) // as long as a kube-apiserver restart takes: client-go's retries back off meanwhile
	proxy.restore(t)
	start := time.Now()
	var reachableAt, freshAt, syncedAt time.Duration
	for time.Since(start) < 60*time.Second && (freshAt == 0 || syncedAt == 0) {
		metrics := w.get(t, "/metrics").body
		reachable := strings.Contains(metrics, "\nadmitc_cluster_api_reachable 1\n")
		synced := strings.Contains(metrics, "\nadmitc_cluster_synced 1\n")
		ready := w.get(t, "/readyz").code == http.StatusOK
		got := w.decide(t, deployment)
		isFresh := assert.ObjectsAreEqual(fresh, got)
		at := time.Since(start)
		if reachable && reachableAt == 0 {
			reachableAt = at
		}
		if synced && syncedAt == 0 {
			syncedAt = at
		}
		if isFresh && freshAt == 0 {
			freshAt = at
		}
		assert.False(t, synced && !isFresh, "%s after the API server came back: admitc_cluster_synced 1 while deciding %+v", at, got)
		assert.False(t, reachable && ready && !isFresh, "%s after the API server came back: reachable and ready while deciding %+v", at, got)
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("API server back: reachable after %s, decisions fresh after %s, synced after %s (0s: never, in 60 s)",
		reachableAt.Round(time.Millisecond), freshAt.Round(time.Millisecond), syncedAt.Round(time.Millisecond))
	assert.NotZero(t, freshAt, "the webhook never saw the label")
	assert.NotZero(t, syncedAt, "admitc_cluster_synced never turned 1")
}

// informersSetup creates the request and parameter namespaces and the
// parameter object (maxReplicas 5).
func informersSetup(t *testing.T) {
	ctx := context.Background()
	for _, ns := range []string{informersNamespace, informersParams} {
		_, err := kc.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err := kc.client.CoreV1().ConfigMaps(informersParams).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: informersLimit}, Data: map[string]string{"maxReplicas": "5"}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// informersCleanup removes what the test created cluster-wide; the
// namespaces stay (without a controller-manager they never finish
// terminating), labels removed.
func informersCleanup(t *testing.T) {
	ctx := context.Background()
	labelNamespace(t, nil)
	_ = kc.client.RbacV1().ClusterRoleBindings().Delete(ctx, informersWebhook, metav1.DeleteOptions{})
	_ = kc.client.RbacV1().ClusterRoles().Delete(ctx, informersWebhook, metav1.DeleteOptions{})
	_ = kc.client.RbacV1().RoleBindings(informersParams).Delete(ctx, informersWebhook, metav1.DeleteOptions{})
	_ = kc.client.RbacV1().Roles(informersParams).Delete(ctx, informersWebhook, metav1.DeleteOptions{})
	_ = kc.client.CoreV1().ServiceAccounts("admission-system").Delete(ctx, informersWebhook, metav1.DeleteOptions{})
}

func deleteInformerPolicies(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"informers-prod-replicas", "informers-replica-limit"} {
		if err := kc.dynamic.Resource(admissionGVR("validatingadmissionpolicybindings")).Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
		if err := kc.dynamic.Resource(admissionGVR("validatingadmissionpolicies")).Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
	}
}

// compiledVAPs is the policies as admitc's vap backend emits them.
func compiledVAPs(t *testing.T, policies string) string {
	out, stderr, code := admitc(t, "compile", "--policies", policies, "--backend", "vap")
	require.Equal(t, 0, code, stderr)
	return out
}

// applyRoles applies the emitted roles and their bindings.
func applyRoles(t *testing.T, rbac map[string]string) {
	t.Helper()
	var docs []string
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		if rbac[kind] != "" {
			docs = append(docs, rbac[kind])
		}
	}
	apply(t, strings.Join(docs, "\n---\n"), false)
}

// emittedRBAC is the ServiceAccount, ClusterRole, ClusterRoleBinding,
// Role and RoleBinding the webhook backend emits for the policies, as
// YAML documents by kind: the ClusterRole reads namespaces, the Role, in
// the namespace the paramRef names, the ConfigMap it names.
func emittedRBAC(t *testing.T, policies string) map[string]string {
	docs := emittedRBACDocs(t, policies, informersWebhook)
	require.Len(t, docs, 5, "the webhook backend emits a ServiceAccount, a ClusterRole, a Role and their bindings")
	rules, _, _ := unstructured.NestedSlice(mustDecode(t, docs["ClusterRole"]), "rules")
	assert.Equal(t, []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"namespaces"}, "verbs": []any{"get", "list", "watch"}}}, rules)
	role := mustDecode(t, docs["Role"])
	assert.Equal(t, informersParams, role["metadata"].(map[string]any)["namespace"])
	rules, _, _ = unstructured.NestedSlice(role, "rules")
	assert.Equal(t, []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "resourceNames": []any{informersLimit}, "verbs": []any{"list", "watch"}}}, rules)
	return docs
}

// emittedRBACDocs is the RBAC objects the webhook backend emits for the
// policies, as JSON documents by kind (one of each kind).
func emittedRBACDocs(t *testing.T, policies, name string) map[string]string {
	out, stderr, code := admitc(t, "compile", "--policies", policies, "--backend", "webhook", "--namespace", informersNamespace, "--name", name)
	require.Equal(t, 0, code, stderr)
	docs := map[string]string{}
	for _, u := range decode(t, "webhook.yaml", []byte(out)) {
		switch u.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			require.Empty(t, docs[u.GetKind()], "one %s", u.GetKind())
			data, err := json.Marshal(u.Object)
			require.NoError(t, err)
			docs[u.GetKind()] = string(data)
		}
	}
	return docs
}

func mustDecode(t *testing.T, doc string) map[string]any {
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(doc), &m))
	return m
}

func mustJSON(t *testing.T, v any) []byte {
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}

// serviceAccountToken asks the API server for a token of the webhook's
// ServiceAccount, as the kubelet does for its pod.
func serviceAccountToken(t *testing.T, name string) string {
	expiry := int64(3600)
	tr, err := kc.client.CoreV1().ServiceAccounts("admission-system").CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}

func writeTokenKubeconfig(t *testing.T, server, token string) string {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: kc.caFile}
	cfg.AuthInfos["webhook"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "webhook"}
	cfg.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// checkMinimalRBAC: the token reads namespaces and the one ConfigMap the
// paramRef names, and is forbidden every other ConfigMap, every other kind
// and every write.
func checkMinimalRBAC(t *testing.T, token string) {
	ctx := context.Background()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: kc.server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAFile: kc.caFile}})
	require.NoError(t, err)
	_, err = c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	assert.NoError(t, err)
	named := metav1.ListOptions{FieldSelector: "metadata.name=" + informersLimit}
	_, err = c.CoreV1().ConfigMaps(informersParams).List(ctx, named)
	assert.NoError(t, err)
	forbidden := map[string]error{}
	_, forbidden["list every ConfigMap"] = c.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	_, forbidden["list the ConfigMaps of the parameter namespace"] = c.CoreV1().ConfigMaps(informersParams).List(ctx, metav1.ListOptions{})
	_, forbidden["list the named ConfigMap in every namespace"] = c.CoreV1().ConfigMaps("").List(ctx, named)
	_, forbidden["list secrets"] = c.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	_, forbidden["list pods"] = c.CoreV1().Pods(informersNamespace).List(ctx, metav1.ListOptions{})
	_, forbidden["list deployments"] = c.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	_, forbidden["create a ConfigMap"] = c.CoreV1().ConfigMaps(informersParams).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	_, forbidden["label a namespace"] = c.CoreV1().Namespaces().Patch(ctx, informersNamespace, types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	for what, err := range forbidden {
		assert.True(t, apierrors.IsForbidden(err), "%s: want forbidden, got %v", what, err)
	}
}

// clusterWebhook is `admitc serve --kubeconfig` as its own process.
type clusterWebhook struct {
	*webhook
	client *http.Client
}

func startClusterWebhook(t *testing.T, policies, kubeconfig string) *clusterWebhook {
	t.Helper()
	bin := buildAdmitc(t)
	dir := t.TempDir()
	w := &webhook{tls: filepath.Join(dir, "tls"), logFile: filepath.Join(dir, "serve.log")}
	out, err := exec.Command(bin, "certs", "--out", w.tls, "--dns", "localhost", "--ip", "127.0.0.1").CombinedOutput()
	require.NoError(t, err, string(out))
	port, err := freePort()
	require.NoError(t, err)
	logf, err := os.Create(w.logFile)
	require.NoError(t, err)
	w.cmd = exec.Command(bin, "serve", "--policies", policies, "--kubeconfig", kubeconfig,
		"--cert", filepath.Join(w.tls, "tls.crt"), "--key", filepath.Join(w.tls, "tls.key"),
		"--host", "127.0.0.1", "--port", fmt.Sprint(port), "--shutdown-delay", "0s")
	w.cmd.Stdout, w.cmd.Stderr = logf, logf
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, w.cmd.Start())
	w.url = fmt.Sprintf("https://127.0.0.1:%d", port)
	t.Cleanup(w.stop)
	ca, err := os.ReadFile(filepath.Join(w.tls, "ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	cw := &clusterWebhook{webhook: w, client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
	eventually(t, "admitc serve to listen", func() bool {
		_, err := cw.client.Get(w.url + "/healthz")
		return err == nil
	})
	return cw
}

type reply struct {
	code int
	body string
}

func (w *clusterWebhook) get(t *testing.T, path string) reply {
	resp, err := w.client.Get(w.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{resp.StatusCode, string(body)}
}

func (w *clusterWebhook) logBytes(t *testing.T) []byte {
	data, err := os.ReadFile(w.logFile)
	require.NoError(t, err)
	return data
}

// decide sends the webhook the AdmissionReview the API server would send
// for a dry-run create of obj in informersNamespace.
func (w *clusterWebhook) decide(t *testing.T, obj *unstructured.Unstructured) verdict {
	t.Helper()
	raw, err := json.Marshal(obj.Object)
	require.NoError(t, err)
	dryRun := true
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "informers", Kind: metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
			Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			Namespace: informersNamespace, Name: obj.GetName(), Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: "admin"}, DryRun: &dryRun,
		},
	}
	review.Request.Object.Raw = raw
	resp, err := w.client.Post(w.url+"/validate", "application/json", bytes.NewReader(mustJSON(t, review)))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out admissionv1.AdmissionReview
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	if out.Response.Allowed {
		return allowed()
	}
	var msgs []string
	for _, m := range regexp.MustCompile(`(?:^|; )\[[^\]]+\] `).Split(out.Response.Result.Message, -1) {
		if m != "" {
			msgs = append(msgs, m)
		}
	}
	return denied(msgs...)
}

// registerFor applies the webhook configurations for policies, pointing at w.
func (w *clusterWebhook) registerFor(t *testing.T, policies string) {
	out, stderr, code := admitc(t, "webhook-config", "--policies", policies, "--namespace", informersNamespace, "--name", informersWebhook,
		"--url", w.url, "--ca-bundle", filepath.Join(w.tls, "ca.crt"))
	require.Equal(t, 0, code, stderr)
	apply(t, out, false)
}

var deniedRequest = regexp.MustCompile(`^.*? denied request: `)

// apiServerVerdict reads the API server's answer: every cause of its
// denial, without the policy and binding names.
func apiServerVerdict(a answer) verdict {
	if a.allowed() {
		return allowed()
	}
	var status apierrors.APIStatus
	if !errors.As(a.err, &status) {
		return denied(a.err.Error())
	}
	var msgs []string
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			msgs = append(msgs, deniedRequest.ReplaceAllString(c.Message, ""))
		}
	}
	if len(msgs) == 0 {
		msgs = []string{deniedRequest.ReplaceAllString(status.Status().Message, "")}
	}
	return denied(msgs...)
}

func eventuallyWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// tcpProxy forwards 127.0.0.1 connections to the API server until cut,
// which closes the listener and every connection: the API server vanishes
// for whoever connects through it, as when it restarts, until restore.
type tcpProxy struct {
	url, target string
	mu          sync.Mutex
	l           net.Listener
	conns       []net.Conn
}

func startProxy(t *testing.T, server string) *tcpProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &tcpProxy{url: "https://" + l.Addr().String(), target: server[len("https://"):]}
	p.serve(l)
	t.Cleanup(p.cut)
	return p
}

func (p *tcpProxy) serve(l net.Listener) {
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.forward(c, p.target)
		}
	}()
}

// restore listens again on the address cut closed.
func (p *tcpProxy) restore(t *testing.T) {
	l, err := net.Listen("tcp", p.url[len("https://"):])
	require.NoError(t, err)
	p.serve(l)
}

func (p *tcpProxy) forward(c net.Conn, target string) {
	up, err := net.Dial("tcp", target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, up)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.l.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
