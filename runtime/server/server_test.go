package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/certs"
	"github.com/admitc/admitc/runtime"
	"github.com/admitc/admitc/runtime/server"
)

const examples = "../../examples/"

// fixture is a running webhook on 127.0.0.1 with a fresh certificate.
type fixture struct {
	srv    *server.Server
	addr   string
	client *http.Client
	logs   *syncBuffer
	dir    string
	done   chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func engine(t testing.TB, files ...string) *runtime.Engine {
	t.Helper()
	src, err := compiler.ReadSources(files)
	require.NoError(t, err)
	set, diags := compiler.Compile(src, compiler.Options{})
	require.Empty(t, diags)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	return e
}

func writeCerts(t testing.TB, dir string) *x509.CertPool {
	b, err := certs.Generate(certs.Request{DNSNames: []string{"localhost"}, Days: 1})
	require.NoError(t, err)
	require.NoError(t, certs.Write(dir, b, true))
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(b.CA))
	return pool
}

func start(t testing.TB, cfg server.Config) *fixture {
	t.Helper()
	dir := t.TempDir()
	pool := writeCerts(t, dir)
	src, err := server.NewCertSource(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), nil)
	require.NoError(t, err)
	logs := &syncBuffer{}
	cfg.Certs = src
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	if cfg.Engine == nil {
		cfg.Engine = engine(t, examples+"policies/policies.json")
	}
	srv := server.New(cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fixture{srv: srv, addr: l.Addr().String(), logs: logs, dir: dir, done: make(chan error, 1)}
	f.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	go func() { f.done <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx, 0)
	})
	return f
}

func (f *fixture) post(t testing.TB, path string, body []byte) (*http.Response, []byte) {
	t.Helper()
	resp, err := f.client.Post("https://"+f.addr+path, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, data
}

// review wraps a manifest in an AdmissionReview as the API server sends it.
func review(t testing.TB, manifest, old, subresource string) []byte {
	t.Helper()
	obj, err := os.ReadFile(examples + manifest)
	require.NoError(t, err)
	req := map[string]any{
		"uid": "uid-" + filepath.Base(manifest), "kind": map[string]string{"group": "", "version": "v1", "kind": "Pod"},
		"resource": map[string]string{"group": "", "version": "v1", "resource": "pods"}, "namespace": "shop", "name": "good",
		"operation": "CREATE", "userInfo": map[string]any{"username": "alice"}, "object": json.RawMessage(obj), "dryRun": true,
	}
	if old != "" {
		oldObj, err := os.ReadFile(examples + old)
		require.NoError(t, err)
		req["oldObject"], req["operation"], req["subResource"] = json.RawMessage(oldObj), "UPDATE", subresource
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
	require.NoError(t, err)
	return b
}

func decodeResponse(t testing.TB, data []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	var r admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(data, &r))
	assert.Equal(t, "admission.k8s.io/v1", r.APIVersion)
	assert.Equal(t, "AdmissionReview", r.Kind)
	require.NotNil(t, r.Response)
	return r.Response
}

func TestValidateDeniesWithStatusWarningsAndAudit(t *testing.T) {
	f := start(t, server.Config{})
	resp, data := f.post(t, "/validate", review(t, "manifests/untrusted-registry.json", "", ""))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := decodeResponse(t, data)
	assert.Equal(t, "uid-untrusted-registry.json", string(r.UID))
	assert.False(t, r.Allowed)
	assert.Equal(t, int32(403), r.Result.Code)
	assert.Equal(t, "Forbidden", string(r.Result.Reason))
	assert.Equal(t, `[allowed-registries] image "quay.io/evil/miner:latest" in container "miner" (spec.containers[0].image) resolves to quay.io/evil/miner, which is not under an allowed registry (registry.k8s.io, docker.io/library)`, r.Result.Message)
	assert.Equal(t, []string{`[require-digest] image "quay.io/evil/miner:latest" in container "miner" is not pinned by digest (@sha256:...)`}, r.Warnings)
	assert.Contains(t, r.AuditAnnotations, "require-digest")
	assert.Nil(t, r.Patch, "/validate never patches")
	assert.Contains(t, f.logs.String(), `"phase":"validate","kind":"Pod","object":"shop/good","operation":"CREATE","user":"alice","dryRun":true,"verdict":"denied","policies":["allowed-registries","require-digest"]`)
}

func TestMutateReturnsBase64JSONPatch(t *testing.T) {
	f := start(t, server.Config{})
	_, data := f.post(t, "/mutate", review(t, "manifests/no-limit.json", "", ""))
	r := decodeResponse(t, data)
	assert.True(t, r.Allowed)
	require.NotNil(t, r.PatchType)
	assert.Equal(t, admissionv1.PatchTypeJSONPatch, *r.PatchType)
	// encoding/json base64-encodes []byte; check the wire form too.
	var wire struct {
		Response struct{ Patch string } `json:"response"`
	}
	require.NoError(t, json.Unmarshal(data, &wire))
	decoded, err := base64.StdEncoding.DecodeString(wire.Response.Patch)
	require.NoError(t, err)
	assert.Equal(t, `[{"op":"add","path":"/spec/containers/0/resources","value":{"requests":{"cpu":"100m","memory":"128Mi"}}}]`, string(decoded))
}

func TestKubectlDebugThroughTheWebhook(t *testing.T) {
	f := start(t, server.Config{})
	_, data := f.post(t, "/validate", review(t, "more/debug-sysadmin.json", "manifests/good.json", "ephemeralcontainers"))
	r := decodeResponse(t, data)
	assert.False(t, r.Allowed)
	assert.Equal(t, `[disallow-privileged] container "debugger-sysadmin" is privileged (spec.ephemeralContainers[0].securityContext.privileged)`, r.Result.Message)
	_, data = f.post(t, "/validate", review(t, "more/debug-general.json", "manifests/good.json", "ephemeralcontainers"))
	assert.True(t, decodeResponse(t, data).Allowed)
}

func TestBadRequests(t *testing.T) {
	f := start(t, server.Config{})
	cases := map[string]struct {
		body string
		code int
		msg  string
	}{
		"malformed":  {`{"apiVersion":`, 400, "body is not an AdmissionReview: unexpected end of JSON input\n"},
		"v1beta1":    {`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"1"}}`, 400, "expected apiVersion admission.k8s.io/v1, kind AdmissionReview; got \"admission.k8s.io/v1beta1\" \"AdmissionReview\" (set admissionReviewVersions: [v1])\n"},
		"no request": {`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 400, "AdmissionReview has no request\n"},
		"no uid":     {`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}`, 400, "AdmissionReview request has no uid\n"},
		"no object":  {`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"CREATE"}}`, 400, "request.object is missing for CREATE: the API server sends the object being created\n"},
		"too large":  {`{"pad":"` + strings.Repeat("x", server.MaxBodyBytes) + `"}`, 413, "body larger than 3145728 bytes\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, data := f.post(t, "/validate", []byte(tc.body))
			assert.Equal(t, tc.code, resp.StatusCode)
			assert.Equal(t, tc.msg, string(data))
		})
	}
	resp, err := f.client.Get("https://" + f.addr + "/validate")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestDeadlineFromTimeoutParameter(t *testing.T) {
	f := start(t, server.Config{})
	resp, data := f.post(t, "/validate?timeout=1ns", review(t, "manifests/good.json", "", ""))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "review deadline exceeded\n", string(data))
}

func TestSlowClientIsCutOff(t *testing.T) {
	f := start(t, server.Config{ReadHeaderTimeout: 200 * time.Millisecond})
	conn, err := tls.Dial("tcp", f.addr, f.client.Transport.(*http.Transport).TLSClientConfig)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("POST /validate HTTP/1.1\r\nHost: localhost\r\n"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	start := time.Now()
	_, err = io.ReadAll(conn)
	assert.Less(t, time.Since(start), 4*time.Second, "the server must close a connection that never finishes its headers")
	_ = err
}

func TestHealthReadyMetrics(t *testing.T) {
	f := start(t, server.Config{})
	f.post(t, "/validate", review(t, "manifests/privileged.json", "", ""))
	for path, want := range map[string]string{"/healthz": "ok\n", "/readyz": "ok\n"} {
		resp, err := f.client.Get("https://" + f.addr + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, want, string(body))
	}
	resp, err := f.client.Get("https://" + f.addr + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`admitc_admission_webhook_requests_total{phase="validate",verdict="denied"} 1`,
		`admitc_admission_policy_violations_total{action="Deny",policy="disallow-privileged"} 1`,
		`admitc_admission_webhook_admission_duration_seconds_count{phase="validate",rejected="true"} 1`,
	} {
		assert.Contains(t, string(body), want)
	}
}

// unsynced is a cluster state whose caches have not synced until synced is set.
type unsynced struct {
	runtime.StaticState
	synced atomic.Bool
}

func (u *unsynced) Synced() bool { return u.synced.Load() }

func TestReadyOnlyOnceTheClusterHasSynced(t *testing.T) {
	state := &unsynced{}
	f := start(t, server.Config{Cluster: state})
	get := func() (int, string) {
		resp, err := f.client.Get("https://" + f.addr + "/readyz")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := get()
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "cluster caches not synced\n", body)
	state.synced.Store(true)
	code, body = get()
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
}

func TestNamespaceObjectFromTheClusterState(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "frozen.yaml")
	require.NoError(t, os.WriteFile(policy, []byte(`policies:
  - name: frozen
    type: cel
    validations:
      - expression: "namespaceObject.metadata.?labels.?frozen.orValue('') != 'true'"
        messageExpression: "'namespace ' + namespaceObject.metadata.name + ' is frozen'"
`), 0o644))
	for labels, want := range map[string]bool{"frozen": false, "thawed": true} {
		state := &runtime.StaticState{NamespaceLabels: map[string]map[string]string{"shop": {"frozen": strconv.FormatBool(labels == "frozen")}}}
		f := start(t, server.Config{Engine: engine(t, policy), Cluster: state})
		_, body := f.post(t, "/validate", review(t, "manifests/good.json", "", ""))
		resp := decodeResponse(t, body)
		assert.Equal(t, want, resp.Allowed, labels)
		if !want {
			assert.Equal(t, "[frozen] namespace shop is frozen", resp.Result.Message)
		}
	}
}
