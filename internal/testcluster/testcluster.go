// Package testcluster starts an etcd and a kube-apiserver on loopback for
// the project's load and cost runs (make audit-load, make apiserver-cost),
// as the e2e suite runs them (test/e2e/cluster_test.go), with an admin
// kubeconfig. The binaries come from test/e2e/build-binaries.sh.
package testcluster

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
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/admitc/admitc/internal/certs"
)

// Cluster is an etcd and a kube-apiserver on loopback.
type Cluster struct {
	dir, bin string
	// Server is the API server's URL.
	Server string
	// Kubeconfig is the path of an admin kubeconfig (system:masters).
	Kubeconfig string
	procs      []*exec.Cmd
}

const adminToken = "admitc-testcluster-admin"

// Start starts etcd and kube-apiserver from bin in dir (their data and
// logs) and waits until the API server is ready.
func Start(bin, dir string) (*Cluster, error) {
	c := &Cluster{dir: dir, bin: bin}
	if err := c.secrets(); err != nil {
		return c, err
	}
	etcd, peer, port := freePort(), freePort(), freePort()
	u := func(p int) string { return fmt.Sprintf("http://127.0.0.1:%d", p) }
	if err := c.start("etcd", "--data-dir", filepath.Join(dir, "etcd"), "--name", "load",
		"--listen-client-urls", u(etcd), "--advertise-client-urls", u(etcd),
		"--listen-peer-urls", u(peer), "--initial-advertise-peer-urls", u(peer),
		"--initial-cluster", "load="+u(peer), "--unsafe-no-fsync", "--quota-backend-bytes", "8589934592"); err != nil {
		return c, err
	}
	pki := filepath.Join(dir, "pki")
	c.Server = fmt.Sprintf("https://127.0.0.1:%d", port)
	if err := c.start("kube-apiserver", fmt.Sprintf("--etcd-servers=%s", u(etcd)),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file="+filepath.Join(pki, certs.CertFile), "--tls-private-key-file="+filepath.Join(pki, certs.KeyFile),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"), "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+filepath.Join(pki, "sa.key"), "--service-account-signing-key-file="+filepath.Join(pki, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true", "--endpoint-reconciler-type=none",
		"--max-requests-inflight=800", "--max-mutating-requests-inflight=400"); err != nil {
		return c, err
	}
	if err := c.writeKubeconfig(); err != nil {
		return c, err
	}
	return c, c.waitReady(90 * time.Second)
}

// secrets writes the serving certificate, the service account key and the
// token file.
func (c *Cluster) secrets() error {
	b, err := certs.Generate(certs.Request{DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Days: 1})
	if err != nil {
		return err
	}
	if err := certs.Write(filepath.Join(c.dir, "pki"), b, true); err != nil {
		return err
	}
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
	return os.WriteFile(filepath.Join(c.dir, "tokens.csv"), []byte(adminToken+",admin,admin-uid,system:masters\n"), 0o600)
}

func (c *Cluster) writeKubeconfig() error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["load"] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthority: filepath.Join(c.dir, "pki", certs.CAFile)}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: adminToken}
	cfg.Contexts["load"] = &clientcmdapi.Context{Cluster: "load", AuthInfo: "admin"}
	cfg.CurrentContext = "load"
	c.Kubeconfig = filepath.Join(c.dir, "kubeconfig")
	return clientcmd.WriteToFile(*cfg, c.Kubeconfig)
}

func (c *Cluster) start(name string, args ...string) error {
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

func (c *Cluster) waitReady(timeout time.Duration) error {
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	transport, err := rest.TransportFor(rc)
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: transport, Timeout: 2 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.Server+"/readyz", nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver not ready after %s; logs in %s", timeout, c.dir)
}

// Stop ends kube-apiserver, then etcd, by their process ids.
func (c *Cluster) Stop() {
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
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
