package certs

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, data []byte) *x509.Certificate {
	block, _ := pem.Decode(data)
	require.NotNil(t, block)
	c, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return c
}

func TestChainAndSANs(t *testing.T) {
	b, err := Generate(Request{DNSNames: []string{"admitc.admission-system.svc", "admitc.admission-system.svc.cluster.local"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Days: 30})
	require.NoError(t, err)
	ca, leaf := parse(t, b.CA), parse(t, b.Cert)
	assert.True(t, ca.IsCA)
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, leaf.ExtKeyUsage)
	assert.Equal(t, x509.ECDSA, leaf.PublicKeyAlgorithm)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, name := range []string{"admitc.admission-system.svc", "admitc.admission-system.svc.cluster.local", "127.0.0.1"} {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		assert.NoError(t, err, name)
	}
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "evil.admission-system.svc", Roots: pool})
	assert.Error(t, err, "a name not in the SANs must not verify")
	other, err := Generate(Request{DNSNames: []string{"x"}, Days: 1})
	require.NoError(t, err)
	otherPool := x509.NewCertPool()
	otherPool.AddCert(parse(t, other.CA))
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "admitc.admission-system.svc", Roots: otherPool})
	assert.Error(t, err, "another CA must not verify the leaf")
}

func TestWriteRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	b, err := Generate(Request{DNSNames: []string{"localhost"}, Days: 1})
	require.NoError(t, err)
	require.NoError(t, Write(dir, b, false))
	info, err := os.Stat(filepath.Join(dir, KeyFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	assert.EqualError(t, Write(dir, b, false), filepath.Join(dir, CAFile)+" already exists; use --force to replace it")
	assert.NoError(t, Write(dir, b, true))
}

func TestGenerateNeedsNames(t *testing.T) {
	_, err := Generate(Request{Days: 1})
	assert.EqualError(t, err, "give at least one --dns name or --ip: the API server checks the certificate's subjectAltName (SERVICE.NAMESPACE.svc)")
}
