package certs_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/opkit-dev/opkit/pkg/webhook/certs"
)

// A TLS server that loads its certificate through controller-runtime's
// certwatcher from the CertDir, as the webhook server does, serves the
// renewed certificate without a restart; a client that trusts only the CA
// bundle from the Secret accepts it, even after the first certificate
// expired.
func TestServerPicksUpRotatedCertificate(t *testing.T) {
	noLeaks(t)
	ns := env.Namespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	opts := options(t, ns, clk)
	opts.CertLifetime = 30 * 24 * time.Hour
	r := newRotator(t, opts)
	mustSync(t, r)
	first := servingCert(t, opts)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cw, err := certwatcher.New(filepath.Join(opts.CertDir, "tls.crt"), filepath.Join(opts.CertDir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	loaded := make(chan *x509.Certificate, 10)
	cw.RegisterCallback(func(c tls.Certificate) { loaded <- c.Leaf })
	if c := <-loaded; !c.Equal(first) { // RegisterCallback calls back with the current one
		t.Fatalf("certwatcher loaded %v, not the certificate in the CertDir", serial(c))
	}
	watchDone := make(chan error, 1)
	go func() { watchDone <- cw.Start(ctx) }()
	addr := serve(t, &tls.Config{GetCertificate: cw.GetCertificate})

	if got := get(t, addr, opts, clk.Now()); !got.Equal(first) {
		t.Fatal("the server does not serve the certificate in the CertDir")
	}

	clk.SetTime(due(first))
	mustSync(t, r)
	second := servingCert(t, opts)
	if second.Equal(first) {
		t.Fatal("Sync did not renew the certificate")
	}
	select {
	case c := <-loaded:
		if !c.Equal(second) {
			t.Fatalf("certwatcher loaded %v, not the renewed %v", serial(c), second.SerialNumber)
		}
	case <-t.Context().Done():
		t.Fatal("certwatcher never loaded the renewed certificate")
	}
	if got := get(t, addr, opts, clk.Now()); !got.Equal(second) {
		t.Error("the running server still serves the first certificate")
	}
	if got := get(t, addr, opts, first.NotAfter.Add(time.Hour)); !got.Equal(second) {
		t.Error("after the first certificate expired the server does not serve the renewed one")
	}
	cancel()
	if err := <-watchDone; err != nil {
		t.Errorf("certwatcher: %v", err)
	}
}

// serve runs an HTTPS server with cfg on a local port until the test ends.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		TLSConfig: cfg,
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }),
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		if err := errors.Join(srv.Close(), ignoreClosed(<-done)); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// get makes a request on a new connection, as a client that trusts only
// the CA bundle in the Secret and reaches the server by the Service's name,
// at time now; it returns the certificate the server presented.
func get(t *testing.T, addr string, opts certs.Options, now time.Time) *x509.Certificate {
	t.Helper()
	_, bundle := caSecret(t, opts)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatal("no CA in the bundle")
	}
	client := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{
			RootCAs:    roots,
			ServerName: opts.Service.Name + "." + opts.Service.Namespace + ".svc",
			Time:       func() time.Time { return now },
		},
	}}
	resp, err := client.Get("https://" + addr + "/")
	if err != nil {
		t.Fatalf("GET as a client trusting only the CA: %v", err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp.TLS.PeerCertificates[0]
}

func serial(c *x509.Certificate) any {
	if c == nil {
		return nil
	}
	return c.SerialNumber
}
