package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// backdate is how far before "now" a certificate's NotBefore is put, so
// that an API server whose clock is a little behind ours still accepts it.
const backdate = 5 * time.Minute

// keyPair is a certificate with its private key, in parsed and PEM forms.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// renewAt is when a certificate is due for renewal: two thirds into its
// validity, as kubelet and cert-manager do by default.
func renewAt(c *x509.Certificate) time.Time {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotBefore.Add(life * 2 / 3)
}

// newCA makes a self-signed CA valid from now for lifetime.
func newCA(now time.Time, lifetime time.Duration, commonName string) (*keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(lifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	kp, err := sign(tmpl, nil)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	return kp, nil
}

// newServing makes a serving certificate for hosts (DNS names or IP
// literals), signed by ca, valid from now for lifetime but never beyond the
// CA, since a chain is only as valid as its shortest link.
func newServing(now time.Time, lifetime time.Duration, ca *keyPair, hosts []string) (*keyPair, error) {
	if len(hosts) == 0 {
		return nil, errors.New("create serving certificate: no host names")
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: hosts[0]},
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	kp, err := sign(tmpl, ca)
	if err != nil {
		return nil, fmt.Errorf("create serving certificate for %s: %w", hosts[0], err)
	}
	return kp, nil
}

// sign makes a new ECDSA P-256 key (fast to make, accepted by every API
// server) and a certificate for it from tmpl, signed by parent, or
// self-signed when parent is nil.
func sign(tmpl *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	parentCert, signer := tmpl, crypto.Signer(key)
	if parent != nil {
		parentCert, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("sign certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return parseKeyPair(
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	)
}

// parseKeyPair parses a PEM certificate (the first of the file) and its
// PEM private key, and checks that they belong together.
func parseKeyPair(certPEM, keyPEM []byte) (*keyPair, error) {
	certs, err := parseCerts(certPEM)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("parse private key: no PEM block")
	}
	key, err := parseKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(certs[0].PublicKey) {
		return nil, errors.New("parse key pair: the private key does not match the certificate")
	}
	return &keyPair{cert: certs[0], key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

func parseKey(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, errors.New("parse private key: not a signing key")
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS1PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	return k, nil
}

// parseCerts parses every CERTIFICATE block of a PEM bundle, in order.
func parseCerts(bundle []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("parse certificate: no CERTIFICATE block")
	}
	return certs, nil
}

func encodeCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
