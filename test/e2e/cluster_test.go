//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/admitc/admitc/internal/certs"
)

// K8sVersion is the kube-apiserver and kubectl release the suite runs.
const K8sVersion = "v1.37.2"

// cluster is a running etcd and kube-apiserver.
type cluster struct {
	dir       string
	bin       string
	procs     []*exec.Cmd
	config    *rest.Config
	client    *kubernetes.Clientset
	dynamic   *dynamic.DynamicClient
	warnings  *warningRecorder
	caFile    string
	tokenFile string
	server    string
	// extraArgs are added to kube-apiserver's command line.
	extraArgs []string
}

// warningRecorder collects the warnings the API server returns.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// take returns and clears the recorded warnings.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// buildBinaries runs the project's build script (a no-op once cached).
func buildBinaries() (string, error) {
	cmd := exec.Command("./build-binaries.sh")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build kube-apiserver/etcd/kubectl %s: %w", K8sVersion, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func startCluster() (*cluster, error) {
	c, etcdPort, err := startEtcdOnly(nil)
	if err != nil {
		return c, err
	}
	if err := c.startAPIServer(etcdPort); err != nil {
		return c, err
	}
	if err := c.connect(); err != nil {
		return c, err
	}
	return c, c.bootstrap()
}

// startEtcdOnly prepares a cluster's secrets and starts its etcd; the
// caller starts kube-apiserver (with extraArgs) or runs it to see it fail.
func startEtcdOnly(extraArgs []string) (*cluster, int, error) {
	bin, err := buildBinaries()
	if err != nil {
		return nil, 0, err
	}
	dir, err := os.MkdirTemp("", "admitc-e2e-")
	if err != nil {
		return nil, 0, err
	}
	c := &cluster{dir: dir, bin: bin, warnings: &warningRecorder{}, extraArgs: extraArgs}
	if err := c.writeSecrets(); err != nil {
		return c, 0, err
	}
	etcdPort, err := c.startEtcd()
	return c, etcdPort, err
}

const adminToken = "admitc-e2e-admin-token"

// deployerToken authenticates "deployer", in system:masters and admitc:admins.
const deployerToken = "admitc-e2e-deployer-token"

func (c *cluster) writeSecrets() error {
	b, err := certs.Generate(certs.Request{DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Days: 1})
	if err != nil {
		return err
	}
	if err := certs.Write(filepath.Join(c.dir, "pki"), b, true); err != nil {
		return err
	}
	c.caFile = filepath.Join(c.dir, "pki", certs.CAFile)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.dir, "pki", "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	c.tokenFile = filepath.Join(c.dir, "tokens.csv")
	tokens := adminToken + ",admin,admin-uid,system:masters\n" + deployerToken + `,deployer,deployer-uid,"system:masters,admitc:admins"` + "\n"
	return os.WriteFile(c.tokenFile, []byte(tokens), 0o600)
}

func (c *cluster) start(name string, args ...string) error {
	logf, err := os.Create(filepath.Join(c.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	c.procs = append(c.procs, cmd)
	return nil
}

func (c *cluster) startEtcd() (int, error) {
	client, err := freePort()
	if err != nil {
		return 0, err
	}
	peer, err := freePort()
	if err != nil {
		return 0, err
	}
	u := func(p int) string { return fmt.Sprintf("http://127.0.0.1:%d", p) }
	err = c.start("etcd", "--data-dir", filepath.Join(c.dir, "etcd"), "--name", "e2e",
		"--listen-client-urls", u(client), "--advertise-client-urls", u(client),
		"--listen-peer-urls", u(peer), "--initial-advertise-peer-urls", u(peer),
		"--initial-cluster", "e2e="+u(peer), "--unsafe-no-fsync")
	return client, err
}

func (c *cluster) startAPIServer(etcdPort int) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.server = fmt.Sprintf("https://127.0.0.1:%d", port)
	if err := c.start("kube-apiserver", c.apiServerArgs(etcdPort, port)...); err != nil {
		return err
	}
	return c.waitReady(90 * time.Second)
}

// apiServerArgs is kube-apiserver's command line, extraArgs last.
func (c *cluster) apiServerArgs(etcdPort, port int) []string {
	pki := filepath.Join(c.dir, "pki")
	args := []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdPort),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file=" + filepath.Join(pki, certs.CertFile), "--tls-private-key-file=" + filepath.Join(pki, certs.KeyFile),
		"--token-auth-file=" + c.tokenFile, "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(pki, "sa.key"), "--service-account-signing-key-file=" + filepath.Join(pki, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true", "--endpoint-reconciler-type=none",
		"--runtime-config=admissionregistration.k8s.io/v1beta1=true"}
	return append(args, c.extraArgs...)
}

func (c *cluster) restConfig() *rest.Config {
	return &rest.Config{Host: c.server, BearerToken: adminToken, TLSClientConfig: rest.TLSClientConfig{CAFile: c.caFile},
		WarningHandler: c.warnings, QPS: 200, Burst: 400}
}

func (c *cluster) waitReady(timeout time.Duration) error {
	cfg := c.restConfig()
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: transport, Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := hc.Get(c.server + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		for _, p := range c.procs {
			if p.ProcessState != nil {
				return fmt.Errorf("%s exited; see %s", p.Path, c.dir)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver not ready after %s; logs in %s", timeout, c.dir)
}

func (c *cluster) connect() error {
	c.config = c.restConfig()
	var err error
	if c.client, err = kubernetes.NewForConfig(c.config); err != nil {
		return err
	}
	c.dynamic, err = dynamic.NewForConfig(c.config)
	return err
}

// bootstrap creates the namespaces and their default service accounts (there
// is no controller-manager to do it).
func (c *cluster) bootstrap() error {
	ctx := context.Background()
	for _, ns := range []string{"shop", "admission-system"} {
		if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := c.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// stop kills every process by PID and removes the work directory unless
// keep is set (to read the logs of a failed run).
func (c *cluster) stop(keep bool) {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
	if !keep {
		os.RemoveAll(c.dir)
	}
}
