package manager_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	certutil "k8s.io/client-go/util/cert"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// Invalid webhook options fail New, naming the field.
func TestWebhookOptionsInvalid(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts manager.WebhookOptions
		want string
	}{
		{"negative port", manager.WebhookOptions{Port: -1}, "Options.Webhook.Port is -1"},
		{"port too large", manager.WebhookOptions{Port: 70000}, "Options.Webhook.Port is 70000"},
		{"fields without a port", manager.WebhookOptions{CertDir: "/certs"}, "Options.Webhook.Port is 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := manager.New(env.Config(), manager.Options{Webhook: tt.opts})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// Without a webhook server there is nothing to register on.
func TestWebhookServerOff(t *testing.T) {
	m := newManager(t, env.Namespace(t), manager.Options{})
	if s := m.WebhookServer(); s != nil {
		t.Fatalf("WebhookServer() = %v without Options.Webhook, want nil", s)
	}
}

// A CertDir without a certificate fails Start at once, naming the files it
// wants, rather than a runnable failing later.
func TestWebhookCertificateMissing(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, env.Namespace(t), manager.Options{Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: 1, CertDir: dir}})
	err := m.Start(t.Context())
	if !errors.Is(err, manager.ErrNoWebhookCertificate) {
		t.Fatalf("Start = %v, want an error wrapping ErrNoWebhookCertificate", err)
	}
	for _, f := range []string{filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("Start = %v, want it to name %s", err, f)
		}
	}
}

// The webhook server's request metrics (controller-runtime's
// controller_runtime_webhook_*, kept in its global registry) are served at
// the manager's /metrics, beside opkit's own.
func TestWebhookMetricsServed(t *testing.T) {
	crt, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{manager.WebhookCertFile: crt, manager.WebhookKeyFile: key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	m := newManager(t, env.Namespace(t), manager.Options{Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: port, CertDir: dir}})
	const path = "/test-webhook-metrics-served"
	m.WebhookServer().Register(path, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	start(t, m)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(crt)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	eventually(t, "the webhook server to answer", func() bool {
		resp, err := c.Get("https://127.0.0.1:" + strconv.Itoa(port) + path)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	_, body := get(t, "http://"+m.MetricsAddr()+"/metrics")
	want := imetrics.WebhookRequests + `{code="200",webhook="` + path + `"}`
	if !strings.Contains(body, want) {
		t.Fatalf("/metrics has no %s:\n%s", want, body)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// GuardWebhook bounds the admission bodies handled at once: two of the
// largest fit, a third waits until its context ends and gets 503; one of
// 7 MiB is refused unread with 413; a share comes back when a request
// ends.
func TestGuardWebhookBoundsAdmissionBodies(t *testing.T) {
	m := newManager(t, env.Namespace(t), manager.Options{Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: 1, CertDir: t.TempDir()}})
	entered, release := make(chan struct{}), make(chan struct{})
	h := m.GuardWebhook(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	const largest = 7<<20 - 1
	serve := func(ctx context.Context, length int64) int {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/validate-x", http.NoBody)
		r.ContentLength = length
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	codes := make(chan int, 2)
	for range 2 {
		go func() { codes <- serve(context.Background(), largest) }()
		<-entered
	}
	if code := serve(context.Background(), 7<<20); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a 7 MiB request: %d, want 413", code)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if code := serve(done, largest); code != http.StatusServiceUnavailable {
		t.Errorf("a third of the largest requests, its context done while it waits: %d, want 503", code)
	}
	// A request without a length counts as the largest, and waits too.
	if code := serve(done, -1); code != http.StatusServiceUnavailable {
		t.Errorf("a request of unknown length while the budget is spent: %d, want 503", code)
	}
	release <- struct{}{}
	if code := <-codes; code != http.StatusOK {
		t.Errorf("the first request: %d, want 200", code)
	}
	go func() { codes <- serve(context.Background(), largest) }()
	<-entered // admitted with the share the first gave back
	close(release)
	for range 2 {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a request within the budget: %d, want 200", code)
		}
	}
}
