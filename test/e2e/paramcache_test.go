//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The namespaces of TestWebhookCachesOnlyWhatParamRefsRead: the parameter
// object named by a paramRef lives in cacheParams; cacheBulk holds large
// ConfigMaps no paramRef names, and the one a label selector picks.
const (
	cacheParams  = "paramcache-params"
	cacheBulk    = "paramcache-bulk"
	cacheWebhook = "paramcache"
	cacheLabel   = "admitc.dev/e2e-param"
)

// cachePolicies reads ConfigMaps through two bindings: one by name in
// cacheParams, one by label selector in the request's namespace.
const cachePolicies = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: paramcache
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: paramcache-by-name
spec:
  policyName: paramcache
  validationActions: [Deny]
  paramRef: {name: paramcache-limit, namespace: paramcache-params, parameterNotFoundAction: Deny}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: paramcache-by-label
spec:
  policyName: paramcache
  validationActions: [Deny]
  paramRef:
    selector: {matchLabels: {admitc.dev/e2e-param: "true"}}
    parameterNotFoundAction: Allow
`

// TestWebhookCachesOnlyWhatParamRefsRead runs `admitc serve` with the
// emitted RBAC and checks, through admitc_cluster_cached_objects, that it
// holds only the ConfigMaps its paramRefs name or select: 100 ConfigMaps of
// 900 KB in a namespace no paramRef names are never cached, ten large ones
// the selector picks are, and leave the cache when deleted. It logs the
// webhook's RSS and Go heap at each step.
func TestWebhookCachesOnlyWhatParamRefsRead(t *testing.T) {
	policies := filepath.Join(t.TempDir(), "paramcache.yaml")
	require.NoError(t, os.WriteFile(policies, []byte(cachePolicies), 0o644))
	ctx := context.Background()
	for _, ns := range []string{cacheParams, cacheBulk} {
		_, err := kc.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	createConfigMap(t, cacheParams, "paramcache-limit", nil, 0)
	createConfigMap(t, cacheBulk, "selected", map[string]string{cacheLabel: "true"}, 0)
	defer deleteConfigMaps(t)

	rbac := emittedRBACDocs(t, policies, cacheWebhook)
	apply(t, rbac["ServiceAccount"], false)
	applyRoles(t, rbac)
	defer deleteCacheRBAC(t)
	w := startClusterWebhook(t, policies, writeTokenKubeconfig(t, kc.server, serviceAccountToken(t, cacheWebhook)))
	eventuallyWithin(t, 60*time.Second, "the webhook to be ready", func() bool { return w.get(t, "/readyz").code == 200 })

	step := func(what string, wantCached int) {
		t.Helper()
		time.Sleep(3 * time.Second) // watch events, if any, arrive
		m := w.get(t, "/metrics").body
		t.Logf("%-44s RSS %4d MiB, Go heap in use %4d MiB, ConfigMaps cached %s", what+":", w.rssMiB(t),
			metricValue(m, "go_memstats_heap_inuse_bytes")>>20, metricText(m, `admitc_cluster_cached_objects{kind="v1/ConfigMap"}`))
		assert.Contains(t, m, fmt.Sprintf(`admitc_cluster_cached_objects{kind="v1/ConfigMap"} %d`+"\n", wantCached), what)
	}
	step("synced", 2)
	for i := range 100 {
		createConfigMap(t, cacheBulk, fmt.Sprintf("bulk-%03d", i), nil, 900<<10)
	}
	step("100 x 900 KB unrelated ConfigMaps created", 2)
	for i := range 10 {
		createConfigMap(t, cacheBulk, fmt.Sprintf("selected-%02d", i), map[string]string{cacheLabel: "true"}, 900<<10)
	}
	step("10 x 900 KB selected ConfigMaps created", 12)
	require.NoError(t, kc.client.CoreV1().ConfigMaps(cacheBulk).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: cacheLabel + "=true"}))
	step("every selected ConfigMap deleted", 1)
	assert.Contains(t, w.get(t, "/metrics").body, `admitc_cluster_watches{kind="v1/ConfigMap"} 2`+"\n", "one list and watch per paramRef")
}

// createConfigMap creates a ConfigMap with labels and size bytes of data.
func createConfigMap(t *testing.T, ns, name string, labels map[string]string, size int) {
	t.Helper()
	data := map[string]string{"maxReplicas": "5"}
	if size > 0 {
		data["payload"] = strings.Repeat("x", size)
	}
	_, err := kc.client.CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// deleteConfigMaps removes what the test created; the namespaces stay
// (without a controller-manager they never finish terminating).
func deleteConfigMaps(t *testing.T) {
	for _, ns := range []string{cacheParams, cacheBulk} {
		_ = kc.client.CoreV1().ConfigMaps(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	}
}

func deleteCacheRBAC(t *testing.T) {
	ctx := context.Background()
	_ = kc.client.RbacV1().ClusterRoleBindings().Delete(ctx, cacheWebhook, metav1.DeleteOptions{})
	_ = kc.client.RbacV1().ClusterRoles().Delete(ctx, cacheWebhook, metav1.DeleteOptions{})
	_ = kc.client.RbacV1().RoleBindings(cacheParams).Delete(ctx, cacheWebhook, metav1.DeleteOptions{})
	_ = kc.client.RbacV1().Roles(cacheParams).Delete(ctx, cacheWebhook, metav1.DeleteOptions{})
	_ = kc.client.CoreV1().ServiceAccounts("admission-system").Delete(ctx, cacheWebhook, metav1.DeleteOptions{})
}

// rssMiB is the webhook process's resident memory.
func (w *clusterWebhook) rssMiB(t *testing.T) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.cmd.Process.Pid))
	require.NoError(t, err)
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(data)
	require.NotNil(t, m)
	kb, _ := strconv.Atoi(string(m[1]))
	return kb >> 10
}

// metricText is the value of the sample called name in a /metrics body
// ("-" when absent).
func metricText(body, name string) string {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return "-"
}

// metricValue is metricText as a number (0 when absent).
func metricValue(body, name string) int64 {
	f, _ := strconv.ParseFloat(metricText(body, name), 64)
	return int64(f)
}
