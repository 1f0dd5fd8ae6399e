// Package certs creates the webhook's serving certificate in pure Go
// (crypto/x509, no openssl): an EC P-256 CA and a leaf for serverAuth with
// the given DNS names and IPs, written as ca.crt, tls.crt and tls.key.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// File names written by Write.
const (
	CAFile   = "ca.crt"
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// Request says what certificate to make.
type Request struct {
	DNSNames []string
	IPs      []net.IP
	// Days is how long the leaf (and the CA) are valid.
	Days int
	// Now is the start of validity (time.Now when zero).
	Now time.Time
}

// Bundle is a CA and a serving certificate, PEM-encoded.
type Bundle struct {
	CA, Cert, Key []byte
}

// Generate creates a new CA and a serving certificate signed by it.
func Generate(req Request) (*Bundle, error) {
	if len(req.DNSNames) == 0 && len(req.IPs) == 0 {
		return nil, errors.New("give at least one --dns name or --ip: the API server checks the certificate's subjectAltName (SERVICE.NAMESPACE.svc)")
	}
	if req.Days <= 0 {
		return nil, fmt.Errorf("--days must be positive, got %d", req.Days)
	}
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	notBefore, notAfter := now.Add(-5*time.Minute), now.Add(time.Duration(req.Days)*24*time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "admitc webhook CA"},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
		SubjectKeyId: keyID(&caKey.PublicKey),
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	cn := "admitc"
	if len(req.DNSNames) > 0 {
		cn = req.DNSNames[0]
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    req.DNSNames, IPAddresses: req.IPs,
		SubjectKeyId: keyID(&key.PublicKey), AuthorityKeyId: ca.SubjectKeyId,
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Bundle{
		CA:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func keyID(pub *ecdsa.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(der)
	return sum[:20]
}

// Write writes the bundle into dir as ca.crt, tls.crt and tls.key (mode
// 0600). Without force it refuses to overwrite any existing file, and it
// writes nothing unless it can write everything.
func Write(dir string, b *Bundle, force bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{{CAFile, b.CA, 0o644}, {CertFile, b.Cert, 0o644}, {KeyFile, b.Key, 0o600}}
	if !force {
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(dir, f.name)); err == nil {
				return fmt.Errorf("%s already exists; use --force to replace it", filepath.Join(dir, f.name))
			}
		}
	}
	for _, f := range files {
		if err := writeAtomic(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
