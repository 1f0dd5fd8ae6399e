package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
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

	"github.com/admitc/admitc/internal/adversarial"
	"github.com/admitc/admitc/internal/certs"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// serving runs `admitc serve` in-process; cancel stands in for SIGTERM.
type serving struct {
	addr   string
	cancel context.CancelFunc
	done   chan error
	logs   *lockedBuffer
	client *http.Client
}

func startServe(t *testing.T, policyDir, tlsDir string, delay time.Duration) *serving {
	t.Helper()
	return startServeLogging(t, policyDir, tlsDir, delay, &lockedBuffer{})
}

// startServeLogging is startServe writing its log to logs as well.
func startServeLogging(t *testing.T, policyDir, tlsDir string, delay time.Duration, logTo io.Writer) *serving {
	t.Helper()
	logs := &lockedBuffer{}
	addrc := make(chan net.Addr, 1)
	o := &ServeOptions{
		Streams:  Streams{Out: io.Discard, Err: io.MultiWriter(logs, logTo)},
		Policies: policyFlags{Paths: []string{policyDir}},
		Cert:     filepath.Join(tlsDir, "tls.crt"), Key: filepath.Join(tlsDir, "tls.key"),
		Host: "127.0.0.1", Port: 0, ShutdownDelay: delay, DrainTimeout: 5 * time.Second,
		Listening: func(a net.Addr) { addrc <- a },
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{cancel: cancel, done: make(chan error, 1), logs: logs}
	go func() { s.done <- o.Run(ctx) }()
	select {
	case a := <-addrc:
		s.addr = a.String()
	case err := <-s.done:
		t.Fatalf("serve exited early: %v\n%s", err, logs.String())
	}
	// Rotation may change the CA, so the test client checks the chain itself where it matters.
	s.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	t.Cleanup(func() { cancel(); <-s.done })
	return s
}

func newCerts(t *testing.T, dir string) {
	b, err := certs.Generate(certs.Request{DNSNames: []string{"localhost"}, Days: 1})
	require.NoError(t, err)
	require.NoError(t, certs.Write(dir, b, true))
}

func (s *serving) validate(t *testing.T, manifest string) (int, string) {
	t.Helper()
	body := reviewBody(t, manifest)
	resp, err := s.client.Post("https://"+s.addr+"/validate", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func reviewBody(t *testing.T, manifest string) []byte {
	obj, err := os.ReadFile(fixtures + manifest)
	require.NoError(t, err)
	return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},` +
		`"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"shop","operation":"CREATE","userInfo":{"username":"bob"},"object":` + string(obj) + `}}`)
}

func copyFile(t *testing.T, from, to string) {
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o644))
}

func TestServeReloadsPoliciesAndKeepsTheLastGoodSet(t *testing.T) {
	policyDir, tlsDir := t.TempDir(), t.TempDir()
	newCerts(t, tlsDir)
	policy := filepath.Join(policyDir, "policies.yaml")
	require.NoError(t, os.WriteFile(policy, []byte("policies:\n  - {name: privileged, type: disallow-privileged}\n"), 0o644))
	s := startServe(t, policyDir, tlsDir, 0)

	_, body := s.validate(t, "manifests/privileged.json")
	assert.Contains(t, body, `"allowed":false`)

	// A valid change is swapped in.
	require.NoError(t, os.WriteFile(policy, []byte("policies:\n  - {name: memory, type: memory-limit, actions: [Warn]}\n"), 0o644))
	require.Eventually(t, func() bool {
		_, body := s.validate(t, "manifests/privileged.json")
		return strings.Contains(body, `"allowed":true`)
	}, 5*time.Second, 50*time.Millisecond, "the new policy set was not swapped in")

	// A broken change is refused, logged and counted; the last good set serves on.
	require.NoError(t, os.WriteFile(policy, []byte("policies:\n  - {name: memory, type: memory-limits}\n"), 0o644))
	require.Eventually(t, func() bool { return strings.Contains(s.logs.String(), "policy reload refused") }, 5*time.Second, 50*time.Millisecond)
	assert.Contains(t, s.logs.String(), `unknown policy type \"memory-limits\"`)
	code, body := s.validate(t, "manifests/no-limit.json")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, "[memory] set a memory limit on every container")
	resp, err := s.client.Get("https://" + s.addr + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(metrics), `admitc_policy_reloads_total{result="failure"} 1`)
	assert.Contains(t, string(metrics), `admitc_policy_reloads_total{result="success"} 1`)
}

// reloads reads admitc_policy_reloads_total{result="success"} from /metrics.
func (s *serving) reloads(t *testing.T) int {
	resp, err := s.client.Get("https://" + s.addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, `admitc_policy_reloads_total{result="success"} `); ok {
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			return n
		}
	}
	return 0
}

func TestServeIgnoresItsOwnLogNextToThePolicies(t *testing.T) {
	policyDir, tlsDir := t.TempDir(), t.TempDir()
	newCerts(t, tlsDir)
	policy := filepath.Join(policyDir, "policies.json")
	copyFile(t, fixtures+"policies/policies.json", policy)
	logFile, err := os.Create(filepath.Join(policyDir, "serve.log"))
	require.NoError(t, err)
	defer logFile.Close()
	// The log goes next to the policies: every reload writes a line to it.
	s := startServeLogging(t, policyDir, tlsDir, 0, logFile)
	for range 20 {
		s.validate(t, "manifests/good.json") // a log line each
	}
	time.Sleep(2 * time.Second)
	idle := s.reloads(t)
	t.Logf("reloads while idle with a log next to the policies: %d in 2s (%.1f/s)", idle, float64(idle)/2)
	assert.Zero(t, idle, "writing the log next to the policies reloaded them")

	copyFile(t, fixtures+"policies/policies.json", policy)
	require.Eventually(t, func() bool { return s.reloads(t) == 1 }, 5*time.Second, 50*time.Millisecond, "a policy change was not reloaded")
	time.Sleep(time.Second)
	assert.Equal(t, 1, s.reloads(t), "one change, one reload: the reload's own log line must not trigger another")
}

func TestServeRefusesToStartWithBrokenPolicies(t *testing.T) {
	tlsDir := t.TempDir()
	newCerts(t, tlsDir)
	_, stderr, code := run(t, "serve", "--policies", "testdata/bad/unknown-type.yaml", "--cert", filepath.Join(tlsDir, "tls.crt"), "--key", filepath.Join(tlsDir, "tls.key"), "--port", "0")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: policies do not compile:\ntestdata/bad/unknown-type.yaml:3:11: policies[0].type: unknown policy type \"disallow-root\" (known types: default-requests, required-labels, allowed-registries, image-digest, disallow-privileged, run-as-non-root, memory-limit, no-host-path, add-labels, cel)\n", stderr)

	_, stderr, code = run(t, "serve", "--policies", fixtures+"policies/policies.json", "--cert", filepath.Join(tlsDir, "missing.crt"), "--key", filepath.Join(tlsDir, "tls.key"), "--port", "0")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "error: load serving certificate: open "+filepath.Join(tlsDir, "missing.crt"))
}

func TestServeRefusesNegativeQueueBounds(t *testing.T) {
	tlsDir := t.TempDir()
	newCerts(t, tlsDir)
	base := []string{"serve", "--policies", fixtures + "policies/policies.json", "--cert", filepath.Join(tlsDir, "tls.crt"), "--key", filepath.Join(tlsDir, "tls.key"), "--port", "0"}
	_, stderr, code := run(t, append(base, "--max-queued", "-1")...)
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: --max-queued -1: want 0 (64 per slot) or more reviews\n", stderr)
	_, stderr, code = run(t, append(base, "--max-queue-wait", "-1s")...)
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: --max-queue-wait -1s: want 0 (the default, 250ms) or a positive duration\n", stderr)
	_, stderr, code = run(t, append(base, "--max-connections", "-1")...)
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: --max-connections -1: want 0 (the default, 32) or more connections\n", stderr)
	_, stderr, code = run(t, append(base, "--max-concurrent-streams", "-2")...)
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: --max-concurrent-streams -2: want 0 (the default, 16) or more streams\n", stderr)

	out, _, code := run(t, "serve", "--help")
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, out, "--max-queue-wait duration")
	assert.Contains(t, out, "--max-queued int")
	assert.Contains(t, out, "--max-connections int")
	assert.Contains(t, out, "--max-concurrent-streams int")
}

// TestCgroupMemoryLimit: a container's memory.max in bytes holds the Go
// runtime to 90% of it; "max" (no limit) or no file leaves it alone.
func TestCgroupMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	limit, ok := cgroupMemoryLimit(write("limited", "268435456\n"))
	assert.True(t, ok)
	assert.Equal(t, int64(256<<20), limit)
	_, ok = cgroupMemoryLimit(write("unlimited", "max\n"))
	assert.False(t, ok)
	_, ok = cgroupMemoryLimit(filepath.Join(dir, "absent"))
	assert.False(t, ok)
}

func TestServeRequiresPolicies(t *testing.T) {
	tlsDir := t.TempDir()
	newCerts(t, tlsDir)
	_, stderr, code := run(t, "serve", "--cert", filepath.Join(tlsDir, "tls.crt"), "--key", filepath.Join(tlsDir, "tls.key"), "--port", "0")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: admitc serve needs --policies: the policy files or directories to enforce, e.g. --policies /etc/admitc/policies/ "+
		"(the built-in example policies are for admitc test, compile and compare only)\n", stderr)

	out, _, code := run(t, "serve", "--help")
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, out, "policy files or directories to enforce (JSON or YAML); repeat or comma-separate; required")
	// The other commands keep the built-in example set as their default.
	out, _, code = run(t, "compile", "--help")
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, out, "default: the built-in example set")
}

func servedSerial(t *testing.T, addr string) string {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	require.NoError(t, err)
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func TestServeReloadsTheCertificate(t *testing.T) {
	policyDir, tlsDir := t.TempDir(), t.TempDir()
	newCerts(t, tlsDir)
	copyFile(t, fixtures+"policies/policies.json", filepath.Join(policyDir, "policies.json"))
	s := startServe(t, policyDir, tlsDir, 0)
	before := servedSerial(t, s.addr)
	newCerts(t, tlsDir)
	require.Eventually(t, func() bool { return servedSerial(t, s.addr) != before }, 5*time.Second, 50*time.Millisecond, "the rotated certificate was not served")
}

func TestServeDrainsOnSIGTERM(t *testing.T) {
	policyDir, tlsDir := t.TempDir(), t.TempDir()
	newCerts(t, tlsDir)
	copyFile(t, fixtures+"policies/policies.json", filepath.Join(policyDir, "policies.json"))
	s := startServe(t, policyDir, tlsDir, 500*time.Millisecond)
	// Clients open a new connection per request, so every request the
	// server accepted must be answered.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var answered, refused, broken atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := reviewBody(t, "manifests/good.json")
			for {
				select {
				case <-stop:
					return
				default:
				}
				// A request counts as accepted once its TLS handshake completed:
				// before that the server never saw it.
				var handshook atomic.Bool
				trace := &httptrace.ClientTrace{TLSHandshakeDone: func(_ tls.ConnectionState, err error) { handshook.Store(err == nil) }}
				req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost, "https://"+s.addr+"/validate", bytes.NewReader(body))
				resp, err := client.Do(req)
				if err != nil {
					if !handshook.Load() {
						refused.Add(1)
					} else {
						t.Logf("request failed: %v", err)
						broken.Add(1)
					}
					continue
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 && bytes.Contains(data, []byte(`"allowed":true`)) {
					answered.Add(1)
				} else {
					t.Logf("bad answer %d: %s", resp.StatusCode, data)
					broken.Add(1)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	s.cancel()
	// Readiness turns false first, while reviews are still answered.
	require.Eventually(t, func() bool {
		resp, err := client.Get("https://" + s.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	}, 400*time.Millisecond, 20*time.Millisecond)
	select {
	case err := <-s.done:
		assert.NoError(t, err)
		s.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
	close(stop)
	wg.Wait()
	assert.Positive(t, answered.Load())
	assert.Zero(t, broken.Load(), "an accepted review was dropped")
	assert.Contains(t, s.logs.String(), `"msg":"stopped"`)
}

// A ValidatingPolicy that reads the cluster through Kyverno's resource
// library would fail, and deny, on every request it matches where nothing
// serves those reads: serve refuses it instead of blocking the cluster.
func TestServeRefusesClusterLibrariesItCannotServe(t *testing.T) {
	tlsDir := t.TempDir()
	newCerts(t, tlsDir)
	policy := "../../examples/kyverno/vpol-cluster-lookups/policy.yaml"
	_, stderr, code := run(t, "serve", "--policies", policy, "--cert", filepath.Join(tlsDir, "tls.crt"), "--key", filepath.Join(tlsDir, "tls.key"), "--port", "0")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, `policy.yaml:26:17: spec.variables[1].expression: policy "vpol-unique-ingress-host" calls Kyverno's resource library, which reads the cluster; admitc serve reads it only from the API server (--kubeconfig, or in a cluster)`)
}

// A policy file that costs more than its compile budget (here 300 foreach
// entries: 2.5 million characters of CEL) is refused at reload, in about a
// second, and the last good set keeps serving.
func TestServeReloadOverCompileBudgetKeepsTheLastGoodSet(t *testing.T) {
	policyDir, tlsDir := t.TempDir(), t.TempDir()
	newCerts(t, tlsDir)
	require.NoError(t, os.WriteFile(filepath.Join(policyDir, "policies.yaml"), []byte("policies:\n  - {name: privileged, type: disallow-privileged}\n"), 0o644))
	s := startServe(t, policyDir, tlsDir, 0)

	require.NoError(t, os.WriteFile(filepath.Join(policyDir, "flat.yaml"), adversarial.FlatForEachUnresolved(300), 0o644))
	require.Eventually(t, func() bool { return strings.Contains(s.logs.String(), "policy reload refused") }, 20*time.Second, 50*time.Millisecond)
	assert.Contains(t, s.logs.String(), "compile budget exceeded at spec.rules[0]: the file's policies emit")
	_, body := s.validate(t, "manifests/privileged.json")
	assert.Contains(t, body, `"allowed":false`, "the last good set no longer serves")
}
