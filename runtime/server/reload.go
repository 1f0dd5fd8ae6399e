package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
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

// Watch calls onChange (debounced) whenever one of files changes, until ctx
// ends. It watches the files' directories, so the symlink swap of a mounted
// ConfigMap or Secret is seen too.
func Watch(ctx context.Context, files []string, logger *slog.Logger, onChange func()) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	dirs := map[string]bool{}
	for _, f := range files {
		dir := f
		if info, err := os.Stat(f); err != nil || !info.IsDir() {
			dir = filepath.Dir(f)
		}
		if !dirs[dir] {
			dirs[dir] = true
			if err := w.Add(dir); err != nil {
				w.Close()
				return fmt.Errorf("watch %s: %w", dir, err)
			}
		}
	}
	go func() {
		defer w.Close()
		var timer *time.Timer
		fire := make(chan struct{}, 1)
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Op == fsnotify.Chmod {
					continue
				}
				if timer != nil {
					timer.Stop()
				}
				timer = time.AfterFunc(200*time.Millisecond, func() {
					select {
					case fire <- struct{}{}:
					default:
					}
				})
			case <-fire:
				onChange()
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				logger.Warn("file watch error", "error", err)
			}
		}
	}()
	return nil
}
