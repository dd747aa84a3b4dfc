package testenv

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The serving certificate is valid for 127.0.0.1 and localhost under the
// caBundle; a name in ConvertCRDs that no CRD has is an error naming it;
// cleanup (which Stop calls) removes the certificate directory.
func TestWebhookInstall(t *testing.T) {
	w, err := prepareWebhook(WebhookOptions{ConvertCRDs: []string{"nope.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(w.server.CertDir, "tls.crt"), filepath.Join(w.server.CertDir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(w.caBundle) {
		t.Fatal("the caBundle holds no certificate")
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("serving certificate for %s: %v", host, err)
		}
	}
	if err := w.install(t.Context(), env.Config()); err == nil || !strings.Contains(err.Error(), "nope.example.com (Options.Webhook.ConvertCRDs) is not in Options.CRDDirs") {
		t.Errorf("install = %v, want an error naming the missing CRD", err)
	}
	w.cleanup()
	if _, err := os.Stat(w.server.CertDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after cleanup, stat %s = %v, want it gone", w.server.CertDir, err)
	}
}
