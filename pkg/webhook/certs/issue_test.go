package certs

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func TestServingCertificateNamesAndUsages(t *testing.T) {
	ca, err := newCA(t0, 10*365*24*time.Hour, "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Service: types.NamespacedName{Namespace: "system", Name: "webhook"}, Hosts: []string{"localhost", "127.0.0.1", "::1"}}
	kp, err := newServing(t0, 24*time.Hour, ca, o.hosts())
	if err != nil {
		t.Fatal(err)
	}
	c := kp.cert
	wantDNS := []string{"webhook.system.svc", "webhook.system.svc.cluster.local", "localhost"}
	if d := cmp.Diff(wantDNS, c.DNSNames); d != "" {
		t.Errorf("DNS names (-want +got):\n%s", d)
	}
	wantIPs := []string{"127.0.0.1", "::1"}
	var gotIPs []string
	for _, ip := range c.IPAddresses {
		gotIPs = append(gotIPs, ip.String())
	}
	if d := cmp.Diff(wantIPs, gotIPs); d != "" {
		t.Errorf("IP addresses (-want +got):\n%s", d)
	}
	if c.IsCA || c.KeyUsage != x509.KeyUsageDigitalSignature {
		t.Errorf("serving certificate: IsCA %v, key usage %v; want a leaf for digital signatures only", c.IsCA, c.KeyUsage)
	}
	if d := cmp.Diff([]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, c.ExtKeyUsage); d != "" {
		t.Errorf("extended key usage (-want +got):\n%s", d)
	}
	if !ca.cert.IsCA || ca.cert.KeyUsage&x509.KeyUsageCertSign == 0 || !ca.cert.MaxPathLenZero {
		t.Errorf("CA: IsCA %v, key usage %v, MaxPathLenZero %v", ca.cert.IsCA, ca.cert.KeyUsage, ca.cert.MaxPathLenZero)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	for _, name := range append(wantDNS, wantIPs...) {
		opts := x509.VerifyOptions{Roots: roots, DNSName: name, CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		if _, err := c.Verify(opts); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if got, want := c.NotAfter, t0.Add(24*time.Hour); !got.Equal(want) {
		t.Errorf("NotAfter = %s, want %s", got, want)
	}
}

func TestServingCertificateNeverOutlivesItsCA(t *testing.T) {
	ca, err := newCA(t0, 48*time.Hour, "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := newServing(t0.Add(24*time.Hour), 365*24*time.Hour, ca, []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	if !kp.cert.NotAfter.Equal(ca.cert.NotAfter) {
		t.Errorf("serving NotAfter = %s, want the CA's %s", kp.cert.NotAfter, ca.cert.NotAfter)
	}
}

func TestRenewAtTwoThirds(t *testing.T) {
	c := &x509.Certificate{NotBefore: t0, NotAfter: t0.Add(300 * time.Hour)}
	if got, want := renewAt(c), t0.Add(200*time.Hour); !got.Equal(want) {
		t.Errorf("renewAt = %s, want %s", got, want)
	}
}

func TestParseKeyPairRejectsAForeignKey(t *testing.T) {
	a, err := newCA(t0, time.Hour, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := newCA(t0, time.Hour, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseKeyPair(a.certPEM, b.keyPEM); err == nil {
		t.Error("parseKeyPair accepted a key of another certificate")
	}
}
