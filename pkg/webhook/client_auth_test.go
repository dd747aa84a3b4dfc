package webhook_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/cert"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// With Options.Webhook.ClientCAFile, the API server's own calls (which
// present the certificate testenv's ClientAuth gives it to admission
// webhooks, and none to conversion) are served, while a direct caller with
// a certificate of another CA fails the TLS handshake on every path and
// one without a certificate is refused on the admission paths.
func TestClientAuth(t *testing.T) {
	caFile := env.Webhook().ClientCAFile
	if caFile == "" {
		t.Fatal("testenv made no webhook client CA (Options.Webhook.ClientAuth)")
	}
	ns := selectedNamespace(t)
	crt, key := selfSigned(t)
	port := freePort(t)
	m, err := manager.New(env.Config(), manager.Options{
		Scheme:  gadgetScheme(),
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "127.0.0.1:0"},
		Cache:   cache.Options{Namespaces: []string{ns}},
		Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: port, CertDir: certDir(t, crt, key), ClientCAFile: caFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := webhook.Register(m, webhook.Hooks[*corev1.ConfigMap]{Defaulter: colors{}, Validator: colors{}}); err != nil {
		t.Fatal(err)
	}
	if err := webhook.RegisterConversion(m, webhook.Conversion[*GadgetV2]{}); err != nil {
		t.Fatal(err)
	}
	start(t, m)
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	installWebhooks(t, ns, base, crt, webhook.MutatePath(configMapKind), webhook.ValidatePath(configMapKind))

	// The API server's calls: admission with its certificate, conversion
	// without one.
	poll(t, "the webhook server to serve", func() bool { return m.WebhookServer().StartedChecker()(nil) == nil })
	got, err := env.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), configMap(ns, "through-the-api-server", nil), metav1.CreateOptions{})
	if err != nil || got.Data["color"] != "blue" {
		t.Fatalf("create through the API server = %v, %v; want it defaulted by the webhook", got, err)
	}
	c := gadgetClient(t)
	convertVia(t, c, ns, base+webhook.ConversionPath, crt)

	// Direct callers.
	stranger := otherCACert(t)
	admission := base + webhook.ValidatePath(configMapKind)
	for _, tt := range []struct {
		name     string
		url      string
		cert     *tls.Certificate
		wantCode int // 0: the TLS handshake fails
	}{
		{"admission, another CA's certificate", admission, stranger, 0},
		{"conversion, another CA's certificate", base + webhook.ConversionPath, stranger, 0},
		{"admission, no certificate", admission, nil, http.StatusForbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, err := postReview(t, tt.url, crt, tt.cert)
			switch {
			case tt.wantCode == 0 && err == nil:
				t.Errorf("POST %s = %d, want the TLS handshake to fail", tt.url, code)
			case tt.wantCode == 0 && !strings.Contains(err.Error(), "certificate"):
				t.Errorf("POST %s: %v, want a TLS certificate error", tt.url, err)
			case tt.wantCode != 0 && (err != nil || code != tt.wantCode):
				t.Errorf("POST %s = %d, %v; want %d", tt.url, code, err, tt.wantCode)
			}
		})
	}
}

// postReview posts a small AdmissionReview-shaped body to url, trusting
// caBundle and presenting clientCert if not nil.
func postReview(t *testing.T, url string, caBundle []byte, clientCert *tls.Certificate) (int, error) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caBundle)
	cfg := &tls.Config{RootCAs: pool}
	if clientCert != nil {
		// Sent whatever CAs the server names: with Certificates, Go's
		// client would send none that those CAs did not sign.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return clientCert, nil }
	}
	tr := &http.Transport{TLSClientConfig: cfg}
	defer tr.CloseIdleConnections()
	body := strings.NewReader(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u"}}`)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// otherCACert returns a client certificate of a CA the server does not
// trust.
func otherCACert(t *testing.T) *tls.Certificate {
	t.Helper()
	crt, key, err := cert.GenerateSelfSignedCertKey("stranger", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		t.Fatal(err)
	}
	return &pair
}
