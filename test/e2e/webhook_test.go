//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// webhook is `admitc serve` running as its own process on 127.0.0.1.
type webhook struct {
	cmd     *exec.Cmd
	url     string
	logFile string
	tls     string
}

func buildAdmitc(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(kc.dir, "admitc")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/admitc")
	cmd.Dir = repo
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

func startWebhook(t *testing.T) *webhook {
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
	w.cmd = exec.Command(bin, "serve", "--policies", repo+"examples/policies/policies.json",
		"--cert", filepath.Join(w.tls, "tls.crt"), "--key", filepath.Join(w.tls, "tls.key"),
		"--host", "127.0.0.1", "--port", fmt.Sprint(port), "--shutdown-delay", "0s")
	w.cmd.Stdout, w.cmd.Stderr = logf, logf
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, w.cmd.Start())
	w.url = fmt.Sprintf("https://127.0.0.1:%d", port)
	eventually(t, "admitc serve to listen", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	t.Cleanup(w.stop)
	return w
}

func (w *webhook) stop() {
	if w.cmd.ProcessState != nil {
		return
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	_ = w.cmd.Wait()
}

func (w *webhook) logs(t *testing.T) string {
	data, err := os.ReadFile(w.logFile)
	require.NoError(t, err)
	return string(data)
}

// register applies admitc's webhook configurations pointing at w.
func (w *webhook) register(t *testing.T, extra ...string) {
	t.Helper()
	args := append([]string{"webhook-config", "--policies", "examples/policies/policies.json", "--namespace", "shop",
		"--url", w.url, "--ca-bundle", filepath.Join(w.tls, "ca.crt")}, extra...)
	out, stderr, code := admitc(t, args...)
	require.Equal(t, 0, code, stderr)
	apply(t, out, false)
}

func TestWebhookThroughTheAPIServer(t *testing.T) {
	deleteManaged(t)
	defer deleteManaged(t)
	w := startWebhook(t)
	w.register(t)
	priv := manifest(t, "examples/manifests/privileged.json")
	var a answer
	eventually(t, "the webhook to deny a privileged pod", func() bool { a = dryRunCreate(t, priv, "shop"); return !a.allowed() })
	assert.Contains(t, a.err.Error(), `admission webhook "validate.admitc.admitc.dev" denied the request: [disallow-privileged] container "web" is privileged (spec.containers[0].securityContext.privileged)`)
	t.Logf("API server: %v", a.err)

	a = dryRunCreate(t, manifest(t, "examples/manifests/no-limit.json"), "shop")
	require.NoError(t, a.err)
	assert.Contains(t, a.warnings, "[memory-limit] set a memory limit on every container: container \"web\" has no memory limit (spec.containers[0].resources.limits.memory)")
	requests, _, _ := unstructuredRequests(a.obj.Object)
	assert.Equal(t, map[string]any{"cpu": "100m", "memory": "128Mi"}, requests)
	t.Logf("API server warnings: %q; requests after the mutating webhook: %v", a.warnings, requests)

	a = dryRunCreate(t, manifest(t, "examples/manifests/deployment-privileged.json"), "shop")
	require.Error(t, a.err)
	assert.Contains(t, a.err.Error(), `[disallow-privileged] container "web" is privileged (spec.template.spec.containers[0].securityContext.privileged)`)

	logs := w.logs(t)
	assert.Contains(t, logs, `"msg":"review","phase":"validate","kind":"Pod","object":"shop/privileged","operation":"CREATE","user":"admin","dryRun":true,"verdict":"denied"`)
	assert.Contains(t, logs, `"phase":"mutate","kind":"Pod","object":"shop/no-limit","operation":"CREATE","user":"admin","dryRun":true,"verdict":"patched","policies":["default-requests"]`)
}

func unstructuredRequests(obj map[string]any) (any, bool, error) {
	v, ok := nested(obj, []string{"spec", "containers", "0", "resources", "requests"})
	return v, ok, nil
}

func TestOutageDrill(t *testing.T) {
	deleteManaged(t)
	defer deleteManaged(t)
	w := startWebhook(t)
	w.register(t)
	priv := manifest(t, "examples/manifests/privileged.json")
	eventually(t, "the webhook to deny a privileged pod", func() bool { return !dryRunCreate(t, priv, "shop").allowed() })

	// The webhook goes down. With Ignore the privileged pod is admitted: the policy is silently off.
	w.stop()
	eventually(t, "failurePolicy Ignore to fail open", func() bool { return dryRunCreate(t, priv, "shop").allowed() })

	// Fail closed: every create in shop is refused...
	for _, kind := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"} {
		_, err := kc.dynamic.Resource(admissionGVR(kind)).Patch(context.Background(), "admitc", types.JSONPatchType,
			[]byte(`[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Fail"}]`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	good := manifest(t, "examples/manifests/good.json")
	var a answer
	eventually(t, "failurePolicy Fail to refuse creates", func() bool { a = dryRunCreate(t, good, "shop"); return !a.allowed() })
	assert.Contains(t, a.err.Error(), "failed calling webhook")
	t.Logf("API server with the webhook down and Fail: %v", a.err)
	// ...while admission-system is unaffected: the namespaceSelector kept the blast radius to shop.
	assert.NoError(t, dryRunCreate(t, priv, "admission-system").err)

	// The escape hatch: webhook configurations are never sent to webhooks.
	deleteManaged(t)
	eventually(t, "deleting the configuration to recover", func() bool { return dryRunCreate(t, good, "shop").allowed() })
}

func TestKubectlDebugThroughTheWebhook(t *testing.T) {
	deleteManaged(t)
	defer deleteManaged(t)
	w := startWebhook(t)
	w.register(t)
	ctx := context.Background()
	pods := kc.client.CoreV1().Pods("shop")
	pod := &corev1.Pod{}
	good := manifest(t, "examples/manifests/good.json")
	good.SetName("debug-target")
	require.NoError(t, fromUnstructured(good.Object, pod))
	eventually(t, "the webhook to admit and create the target pod", func() bool {
		_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		return err == nil
	})
	defer pods.Delete(ctx, "debug-target", metav1.DeleteOptions{})

	debug := func(name string, privileged bool) error {
		current, err := pods.Get(ctx, "debug-target", metav1.GetOptions{})
		require.NoError(t, err)
		ec := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: name, Image: "docker.io/library/busybox:1.37@sha256:4f7a9c0e1b2d3c4e5f60718293a4b5c6d7e8f90112233445566778899aabbccd",
			Stdin: true, TTY: true, TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
		}}
		if privileged {
			ec.SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
		}
		current.Spec.EphemeralContainers = append(current.Spec.EphemeralContainers, ec)
		_, err = pods.UpdateEphemeralContainers(ctx, "debug-target", current, metav1.UpdateOptions{})
		return err
	}
	// kubectl debug --profile=sysadmin adds a privileged container: denied.
	err := debug("debugger-sysadmin", true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `[disallow-privileged] container "debugger-sysadmin" is privileged (spec.ephemeralContainers[0].securityContext.privileged)`)
	t.Logf("API server: %v", err)
	// --profile=general: admitted.
	assert.NoError(t, debug("debugger-general", false))
	assert.Contains(t, w.logs(t), `"subresource":"ephemeralcontainers"`)
	assert.Contains(t, w.logs(t), `"object":"shop/debug-target","operation":"UPDATE"`)
}
