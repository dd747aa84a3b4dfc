package plane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files in the certificate directory. kube-apiserver finds its serving
// certificate in --cert-dir under these names.
const (
	servingCertFile = "apiserver.crt"
	servingKeyFile  = "apiserver.key"
	clientCAFile    = "client-ca.crt"
	saPublicFile    = "sa.pub"
	saKeyFile       = "sa.key"
)

// ca is a certificate authority that lives as long as one control plane.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(name string) (*ca, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := template(pkix.Name{CommonName: name})
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &ca{cert: cert, key: key}, nil
}

func template(subject pkix.Name) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
	}
}

// issue returns a certificate and key, PEM-encoded, signed by c.
func (c *ca) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, key.Public(), c.key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), keyPEM, nil
}

func (c *ca) certPEM() []byte { return pemBlock("CERTIFICATE", c.cert.Raw) }

// servingCert is for kube-apiserver on host.
func (c *ca) servingCert(host string) ([]byte, []byte, error) {
	tmpl := template(pkix.Name{CommonName: "kube-apiserver"})
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.DNSNames = []string{"localhost"}
	tmpl.IPAddresses = []net.IP{net.ParseIP(host), net.IPv6loopback}
	return c.issue(tmpl)
}

// clientCert authenticates user as a member of groups.
func (c *ca) clientCert(user string, groups ...string) ([]byte, []byte, error) {
	tmpl := template(pkix.Name{CommonName: user, Organization: groups})
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return c.issue(tmpl)
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// writeCerts writes kube-apiserver's serving certificate, the client CA and
// a service account signing key pair into dir, and returns the serving CA
// and the admin's client certificate and key.
func writeCerts(dir, host string) (servingCA, adminCert, adminKey []byte, err error) {
	serving, err := newCA("opkit-testenv-serving")
	if err != nil {
		return nil, nil, nil, err
	}
	clients, err := newCA("opkit-testenv-clients")
	if err != nil {
		return nil, nil, nil, err
	}
	crt, key, err := serving.servingCert(host)
	if err != nil {
		return nil, nil, nil, err
	}
	adminCert, adminKey, err = clients.clientCert("admin", "system:masters")
	if err != nil {
		return nil, nil, nil, err
	}
	sa, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	saKey, err := encodeKey(sa)
	if err != nil {
		return nil, nil, nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(sa.Public())
	if err != nil {
		return nil, nil, nil, err
	}
	files := map[string][]byte{
		servingCertFile: crt, servingKeyFile: key, clientCAFile: clients.certPEM(),
		saKeyFile: saKey, saPublicFile: pemBlock("PUBLIC KEY", saPub),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, nil, nil, fmt.Errorf("write %s: %w", name, err)
		}
	}
	return serving.certPEM(), adminCert, adminKey, nil
}
