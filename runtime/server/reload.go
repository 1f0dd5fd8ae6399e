package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync/atomic"
)

// CertSource serves a certificate and key from files and reloads them when
// they change, so a rotated certificate is used without a restart.
type CertSource struct {
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
	onLoad            func(*x509.Certificate)
}

// NewCertSource loads the key pair; onLoad (may be nil) sees each loaded leaf.
func NewCertSource(certFile, keyFile string, onLoad func(*x509.Certificate)) (*CertSource, error) {
	c := &CertSource{certFile: certFile, keyFile: keyFile, onLoad: onLoad}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the key pair again; on error the current pair stays in use.
func (c *CertSource) Reload() error {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("load serving certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("parse serving certificate: %w", err)
	}
	pair.Leaf = leaf
	c.cert.Store(&pair)
	if c.onLoad != nil {
		c.onLoad(leaf)
	}
	return nil
}

// GetCertificate implements tls.Config.GetCertificate.
func (c *CertSource) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cert.Load(), nil
}

// Files are the files to watch.
func (c *CertSource) Files() []string { return []string{c.certFile, c.keyFile} }

// CertPool is a CA pool for client certificates.
type CertPool struct{ pool *x509.CertPool }

// LoadCertPool reads PEM CA certificates from file.
func LoadCertPool(file string) (*CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("client CA %s holds no PEM certificate", file)
	}
	return &CertPool{pool: pool}, nil
}

// Pool returns the x509 pool.
func (p *CertPool) Pool() *x509.CertPool { return p.pool }
