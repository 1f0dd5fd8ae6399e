package cli

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
	"github.com/admitc/admitc/runtime/cluster"
	"github.com/admitc/admitc/runtime/server"
)

func TestServeClusterSourceFlags(t *testing.T) {
	tlsDir := t.TempDir()
	newCerts(t, tlsDir)
	tlsArgs := []string{"--policies", fixtures + "policies/policies.json", "--cert", filepath.Join(tlsDir, "tls.crt"), "--key", filepath.Join(tlsDir, "tls.key"), "--port", "0"}
	cases := map[string]struct {
		inPod bool
		args  []string
		want  string
	}{
		"--offline and --kubeconfig": {args: []string{"--offline", "--kubeconfig", "kc.yaml"},
			want: "error: --offline reads namespaces and parameter objects from files; --kubeconfig reads them from the API server: give one\n"},
		"--kubeconfig and a file": {args: []string{"--kubeconfig", "kc.yaml", "--namespace-labels", "labels.yaml"},
			want: "error: --namespace-labels and --params are for offline use: with --kubeconfig, namespaces and parameter objects come from the API server (add --offline to read files instead)\n"},
		"in a pod, --params": {inPod: true, args: []string{"--params", fixtures + "params/registries-k8s.json"},
			want: "error: --namespace-labels and --params are for offline use: with in-cluster configuration, namespaces and parameter objects come from the API server (add --offline to read files instead)\n"},
		"a kubeconfig that is not there": {args: []string{"--kubeconfig", filepath.Join(tlsDir, "missing.yaml")},
			want: "error: --kubeconfig " + filepath.Join(tlsDir, "missing.yaml") + ": stat " + filepath.Join(tlsDir, "missing.yaml") + ": no such file or directory\n"},
		"in a pod without its service account": {inPod: true,
			want: "error: in-cluster configuration: unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.inPod {
				t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
				t.Setenv("KUBERNETES_SERVICE_PORT", "")
			} else {
				t.Setenv("KUBERNETES_SERVICE_HOST", "")
			}
			_, stderr, code := run(t, append(append([]string{"serve"}, tlsArgs...), tc.args...)...)
			assert.Equal(t, ExitUsage, code)
			assert.Equal(t, tc.want, stderr)
		})
	}
}

// TestServeOfflineParams: with --offline, parameter objects come from
// --params files, so a paramKind policy decides as admitc test does.
func TestServeOfflineParams(t *testing.T) {
	tlsDir := t.TempDir()
	newCerts(t, tlsDir)
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1") // --offline wins inside a pod
	logs := &lockedBuffer{}
	addrc := make(chan net.Addr, 1)
	o := &ServeOptions{
		Streams:  Streams{Out: io.Discard, Err: logs},
		Policies: policyFlags{Paths: []string{fixtures + "policies/params-policy.yaml"}},
		Params:   []string{fixtures + "params/registries-k8s.json"}, Offline: true,
		Cert: filepath.Join(tlsDir, "tls.crt"), Key: filepath.Join(tlsDir, "tls.key"),
		Host: "127.0.0.1", DrainTimeout: 5 * time.Second, Listening: func(a net.Addr) { addrc <- a },
	}
	o.Complete()
	require.NoError(t, o.Validate())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	defer func() { cancel(); <-done }()
	s := &serving{client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}}
	select {
	case a := <-addrc:
		s.addr = a.String()
	case err := <-done:
		t.Fatalf("serve exited: %v\n%s", err, logs.String())
	}
	_, body := s.validate(t, "manifests/tag-only.json")
	assert.Contains(t, body, `images must come from registry.k8s.io: web (docker.io/library/nginx:1.30-alpine)`)
	_, body = s.validate(t, "manifests/good.json")
	assert.Contains(t, body, `"allowed":true`)
	assert.Contains(t, logs.String(), `"cluster":"offline"`)
}

// TestReloadFollowsParamKinds: a reloaded set's new parameter kind is
// watched before it is swapped in, and the kind only the old set read is
// dropped after.
func TestReloadFollowsParamKinds(t *testing.T) {
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	limit := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Limit"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(configMap, meta.RESTScopeNamespace)
	mapper.Add(limit, meta.RESTScopeRoot)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "configmaps"}: "ConfigMapList", {Group: "example.com", Version: "v1", Resource: "limits"}: "LimitList"})
	state := cluster.New(cluster.Config{Client: kubefake.NewClientset(), Dynamic: dyn, Mapper: mapper})
	engineOf := func(kind schema.GroupVersionKind) *runtime.Engine {
		apiVersion, k := kind.ToAPIVersionAndKind()
		e, err := runtime.NewEngine(&ir.PolicySet{Version: ir.Version, Policies: []ir.Policy{{Name: "p", Kind: ir.Validating,
			ParamKind: &ir.ParamKind{APIVersion: apiVersion, Kind: k}, ParamRef: &ir.ParamRef{Name: "x", ParameterNotFoundAction: ir.ParamDeny}}}})
		require.NoError(t, err)
		return e
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old := engineOf(configMap)
	state.Start(ctx, old.PolicySet())
	srv := server.New(server.Config{Engine: old, Cluster: state})

	next := engineOf(limit)
	swapWatching(ctx, srv, next, state, slog.New(slog.DiscardHandler))
	assert.Same(t, next, srv.Engine())
	_, err := state.Params(limit)
	assert.NoError(t, err, "the new kind is watched")
	_, err = state.Params(configMap)
	assert.Error(t, err, "the old kind is dropped")
	assert.True(t, state.Synced())
}
