package webhook_test

import (
	"crypto/tls"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// /readyz fails until the webhook server serves TLS (here: until it has a
// certificate to serve), and passes once it does.
func TestReadyzGatedByWebhook(t *testing.T) {
	ns := env.Namespace(t)
	var serving atomic.Pointer[tls.Certificate]
	m := newManager(t, ns, manager.WebhookOptions{
		Port: freePort(t),
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := serving.Load(); c != nil {
				return c, nil
			}
			return nil, errors.New("no certificate yet")
		},
	})
	start(t, m)
	probes := "http://" + m.HealthProbeAddr()
	code, body := get(t, probes+"/readyz/webhook")
	if code != 500 || !strings.Contains(body, "[-]webhook failed") {
		t.Fatalf("/readyz/webhook without a certificate = %d %q, want 500 naming the webhook check", code, body)
	}
	if code, body := get(t, probes+"/readyz"); code != 500 || !strings.Contains(body, "[-]webhook failed") {
		t.Fatalf("/readyz without a certificate = %d %q, want 500 naming the webhook check", code, body)
	}
	t.Logf("/readyz/webhook before the server serves TLS: %q", body)

	crt, key := selfSigned(t)
	c, err := tls.X509KeyPair(crt, key)
	if err != nil {
		t.Fatal(err)
	}
	serving.Store(&c)
	poll(t, "/readyz to pass once the server serves TLS", func() bool {
		code, _ := get(t, probes+"/readyz")
		return code == 200
	})
}
