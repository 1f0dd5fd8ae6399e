//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/admitc/admitc/runtime"
)

// staticPolicies are compiled to static manifests: the built-in example set
// (scoped to shop) and the guard of admitc's own admission policies.
var staticPolicies = []string{"--policies", "examples/policies/policies.json", "--policies", "examples/static", "--namespace", "shop"}

// compileStatic writes the static tree into dir/static, as kube-apiserver sees it there.
func compileStatic(t *testing.T, dir string) string {
	t.Helper()
	root := filepath.Join(dir, "static")
	args := append([]string{"compile", "--backend", "static", "--static-root", root, "--out", dir}, staticPolicies...)
	_, stderr, code := admitc(t, args...)
	require.Equal(t, 0, code, stderr)
	return root
}

// checkStatic runs compile --check on dir and returns its exit code and output.
func checkStatic(t *testing.T, dir string) (int, string) {
	t.Helper()
	args := append([]string{"compile", "--backend", "static", "--static-root", filepath.Join(dir, "static"), "--check", dir}, staticPolicies...)
	out, stderr, code := admitc(t, args...)
	return code, out + stderr
}

func TestStaticManifests(t *testing.T) {
	root := compileStatic(t, t.TempDir())
	c, etcdPort, err := startEtcdOnly([]string{"--admission-control-config-file=" + filepath.Join(root, "admission-configuration.yaml")})
	if c != nil {
		defer func() { c.stop(t.Failed()); logKept(t, c) }()
	}
	require.NoError(t, err)
	require.NoError(t, c.startAPIServer(etcdPort))
	require.NoError(t, c.connect())
	deployer := clientAs(t, c, deployerToken)
	ctx := context.Background()

	t.Run("the guard denies from the first request", func(t *testing.T) {
		// The first request after /readyz: no admission object exists in the API.
		const fixture = "examples/static-fixtures/managed-policy.yaml"
		_, err := c.dynamic.Resource(admissionGVR("validatingadmissionpolicies")).Create(ctx, manifest(t, fixture), metav1.CreateOptions{})
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "%v", err)
		assert.Contains(t, err.Error(), "ValidatingAdmissionPolicy 'admitc-guard-admission.static.k8s.io'")
		assert.Contains(t, err.Error(), "only members of admitc:admins may change admission policies managed by admitc; admin is not one")

		// admitc test decides the same (its user, admitc-test, is in no group either).
		want := admitcTest(t, "examples/static/guard-admission.yaml", fixture)["managed-policy"]
		assert.False(t, want.Allowed)
		require.Len(t, want.Violations, 1)
		assert.Equal(t, "admitc-guard-admission", want.Violations[0].Policy)
		assert.Equal(t, strings.Replace(want.Violations[0].Message, "admitc-test is not one", "admin is not one", 1),
			err.Error()[strings.Index(err.Error(), "only members"):], "the API server's message is admitc test's, for user admin")
	})

	t.Run("the static policies are invisible and cannot be changed", func(t *testing.T) {
		for _, resource := range []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"} {
			ri := c.dynamic.Resource(admissionGVR(resource))
			list, err := ri.List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			assert.Empty(t, list.Items, resource)
			_, err = ri.Get(ctx, "disallow-privileged.static.k8s.io", metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "get %s: %v", resource, err)
			err = ri.Delete(ctx, "disallow-privileged.static.k8s.io", metav1.DeleteOptions{})
			assert.True(t, apierrors.IsNotFound(err), "delete %s: %v", resource, err)
		}
		vap := managedVAP("disallow-privileged.static.k8s.io")
		_, err := deployer.Resource(admissionGVR("validatingadmissionpolicies")).Create(ctx, vap, metav1.CreateOptions{})
		require.Error(t, err)
		assert.True(t, apierrors.IsInvalid(err), "%v", err)
		assert.Contains(t, err.Error(), `names ending with ".static.k8s.io" are reserved for static manifest-based configurations`)
	})

	t.Run("the guard protects API-based admitc policies", func(t *testing.T) {
		vaps := c.dynamic.Resource(admissionGVR("validatingadmissionpolicies"))
		_, err := deployer.Resource(admissionGVR("validatingadmissionpolicies")).Create(ctx, managedVAP("api-policy"), metav1.CreateOptions{})
		require.NoError(t, err, "a member of admitc:admins may create it")
		patch := []byte(`{"spec":{"failurePolicy":"Ignore"}}`)
		_, err = vaps.Patch(ctx, "api-policy", types.MergePatchType, patch, metav1.PatchOptions{})
		assert.True(t, apierrors.IsForbidden(err), "a cluster-admin may not change it: %v", err)
		unlabel := []byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":null}}}`)
		_, err = vaps.Patch(ctx, "api-policy", types.MergePatchType, unlabel, metav1.PatchOptions{})
		assert.True(t, apierrors.IsForbidden(err), "nor remove the label that guards it: %v", err)
		err = vaps.Delete(ctx, "api-policy", metav1.DeleteOptions{})
		assert.True(t, apierrors.IsForbidden(err), "nor delete it: %v", err)
		require.NoError(t, deployer.Resource(admissionGVR("validatingadmissionpolicies")).Delete(ctx, "api-policy", metav1.DeleteOptions{}))
		other := managedVAP("not-admitc")
		other.SetLabels(nil)
		_, err = vaps.Create(ctx, other, metav1.CreateOptions{})
		require.NoError(t, err, "policies admitc does not manage are not guarded")
		require.NoError(t, vaps.Delete(ctx, "not-admitc", metav1.DeleteOptions{}))
	})

	t.Run("pods are judged as admitc test judges them", func(t *testing.T) {
		require.NoError(t, bootstrapNamespace(c, "shop"))
		want := admitcTest(t, "examples/policies/policies.json", createFixtures...)
		for _, file := range createFixtures {
			obj := manifest(t, file)
			w := want[obj.GetName()]
			var got answer
			var problems []string
			deadline := time.Now().Add(settleTimeout)
			for {
				got = dryRunCreateIn(t, c, obj, "shop")
				if problems = staticDisagreements(w, got); len(problems) == 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			assert.Empty(t, problems, file)
		}
		good := dryRunCreateIn(t, c, manifest(t, "examples/manifests/good.json"), "shop")
		require.NoError(t, good.err)
		containers, _, _ := unstructured.NestedSlice(good.obj.Object, "spec", "containers")
		require.NotEmpty(t, containers)
		_, found, _ := unstructured.NestedMap(containers[0].(map[string]any), "resources", "requests")
		assert.True(t, found, "the static MutatingAdmissionPolicy default-requests set requests")
	})
}

// TestStaticManifestsMalformed breaks a generated tree the two ways the
// issue names and shows that kube-apiserver refuses to start and compile
// --check refuses the tree, each with the loader's reason.
func TestStaticManifestsMalformed(t *testing.T) {
	cases := map[string]struct {
		breakTree func(t *testing.T, root string)
		reason    string
	}{
		"a mutating policy in the validating directory": {
			breakTree: func(t *testing.T, root string) {
				data, err := os.ReadFile(filepath.Join(root, "mutating-policies", "manifests.yaml"))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(root, "validating-policies", "zz-mutating.yaml"), data, 0o644))
			},
			reason: "/validating-policies/zz-mutating.yaml: unsupported resource type *v1.MutatingAdmissionPolicy",
		},
		"a name without the reserved suffix": {
			breakTree: func(t *testing.T, root string) {
				path := filepath.Join(root, "validating-policies", "manifests.yaml")
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				broken := strings.Replace(string(data), "name: disallow-privileged.static.k8s.io", "name: disallow-privileged", 1)
				require.NotEqual(t, string(data), broken)
				require.NoError(t, os.WriteFile(path, []byte(broken), 0o644))
			},
			reason: `"disallow-privileged" in file "` + "ROOT" + `/validating-policies/manifests.yaml" must have a name ending with ".static.k8s.io"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			root := compileStatic(t, dir)
			tc.breakTree(t, root)
			reason := strings.ReplaceAll(tc.reason, "ROOT", root)

			log := failedStart(t, filepath.Join(root, "admission-configuration.yaml"))
			assert.Contains(t, log, reason, "kube-apiserver's message")

			code, out := checkStatic(t, dir)
			assert.Equal(t, 1, code, out)
			assert.Contains(t, out, "kube-apiserver would refuse to start")
			assert.Contains(t, out, reason, "compile --check's message")
		})
	}
}

// failedStart runs kube-apiserver with the AdmissionConfiguration config,
// expects it to exit with an error within a minute, and returns its output.
func failedStart(t *testing.T, config string) string {
	t.Helper()
	c, etcdPort, err := startEtcdOnly(nil)
	if c != nil {
		defer c.stop(false)
	}
	require.NoError(t, err)
	port, err := freePort()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append(c.apiServerArgs(etcdPort, port), "--admission-control-config-file="+config)
	out, err := exec.CommandContext(ctx, filepath.Join(c.bin, "kube-apiserver"), args...).CombinedOutput()
	require.Error(t, err, "kube-apiserver started with a malformed static tree")
	require.NoError(t, ctx.Err(), "kube-apiserver neither started nor failed within a minute")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Logf("kube-apiserver: %s", lines[len(lines)-1])
	// klog quotes the error: undo its escaping to compare messages.
	return strings.ReplaceAll(string(out), `\"`, `"`)
}

// managedVAP is a ValidatingAdmissionPolicy labelled as admitc's.
func managedVAP(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"app.kubernetes.io/managed-by": "admitc"}},
		"spec": map[string]any{
			"failurePolicy":    "Fail",
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"configmaps"}}}},
			"validations":      []any{map[string]any{"expression": "true"}},
		},
	}}
}

// clientAs is a dynamic client of c authenticated by token.
func clientAs(t *testing.T, c *cluster, token string) *dynamic.DynamicClient {
	cfg := c.restConfig()
	cfg.BearerToken = token
	d, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return d
}

// bootstrapNamespace creates a namespace and its default service account.
func bootstrapNamespace(c *cluster, ns string) error {
	ctx := context.Background()
	nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if _, err := c.dynamic.Resource(runtime.ResourceFor(nsObj.GroupVersionKind())).Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		return err
	}
	sa := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default"}}}
	_, err := c.dynamic.Resource(runtime.ResourceFor(sa.GroupVersionKind())).Namespace(ns).Create(ctx, sa, metav1.CreateOptions{})
	return err
}

// dryRunCreateIn asks c to admit obj in namespace without storing it.
func dryRunCreateIn(t *testing.T, c *cluster, obj *unstructured.Unstructured, namespace string) answer {
	t.Helper()
	obj = obj.DeepCopy()
	obj.SetNamespace(namespace)
	ri := c.dynamic.Resource(runtime.ResourceFor(obj.GroupVersionKind())).Namespace(namespace)
	out, err := ri.Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return answer{obj: out, err: err}
}

// staticDisagreements lists how the API server's answer differs from
// admitc test's; a static policy is named NAME.static.k8s.io.
func staticDisagreements(w offline, got answer) []string {
	if w.Allowed != got.allowed() {
		return []string{"admitc test says allowed=" + map[bool]string{true: "true", false: "false"}[w.Allowed] + ", the API server said: " + errString(got.err)}
	}
	if got.allowed() {
		return nil
	}
	m := vapPolicy.FindStringSubmatch(got.err.Error())
	if m == nil {
		return []string{"denied by something other than a VAP: " + got.err.Error()}
	}
	for _, v := range w.Violations {
		if v.Policy+".static.k8s.io" == m[1] && strings.Contains(got.err.Error(), v.Message) {
			return nil
		}
	}
	return []string{"the API server's denial " + got.err.Error() + " is not one of admitc test's"}
}

func errString(err error) string {
	if err == nil {
		return "allowed"
	}
	return err.Error()
}

func logKept(t *testing.T, c *cluster) {
	if t.Failed() {
		t.Logf("logs kept in %s", c.dir)
	}
}

// TestStaticWebhook registers admitc serve through static webhook
// configurations: no webhook configuration exists in the API, yet the
// webhook judges pods.
func TestStaticWebhook(t *testing.T) {
	w := startWebhook(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "static")
	_, stderr, code := admitc(t, "compile", "--backend", "static", "--static-webhook", "--url", w.url, "--ca-bundle", filepath.Join(w.tls, "ca.crt"),
		"--policies", "examples/policies/policies.json", "--namespace", "shop", "--static-root", root, "--out", dir)
	require.Equal(t, 0, code, stderr)
	c, etcdPort, err := startEtcdOnly([]string{"--admission-control-config-file=" + filepath.Join(root, "admission-configuration.yaml")})
	if c != nil {
		defer func() { c.stop(t.Failed()); logKept(t, c) }()
	}
	require.NoError(t, err)
	require.NoError(t, c.startAPIServer(etcdPort))
	require.NoError(t, c.connect())
	require.NoError(t, bootstrapNamespace(c, "shop"))

	a := dryRunCreateIn(t, c, manifest(t, "examples/manifests/privileged.json"), "shop")
	require.Error(t, a.err)
	assert.Contains(t, a.err.Error(), `admission webhook "validate.admitc.admitc.dev" denied the request: [disallow-privileged] container "web" is privileged`)
	for _, resource := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"} {
		list, err := c.dynamic.Resource(admissionGVR(resource)).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		assert.Empty(t, list.Items, resource)
	}
	good := dryRunCreateIn(t, c, manifest(t, "examples/manifests/good.json"), "shop")
	require.NoError(t, good.err)
	containers, _, _ := unstructured.NestedSlice(good.obj.Object, "spec", "containers")
	_, found, _ := unstructured.NestedMap(containers[0].(map[string]any), "resources", "requests")
	assert.True(t, found, "the static mutating webhook set requests")
}
