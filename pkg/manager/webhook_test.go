package manager_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/opkit-dev/opkit/internal/freeport"
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
	webhookAnswers(t, crt, port, path)
	_, body := get(t, "http://"+m.MetricsAddr()+"/metrics")
	want := imetrics.WebhookRequests + `{code="200",webhook="` + path + `"}`
	if !strings.Contains(body, want) {
		t.Fatalf("/metrics has no %s:\n%s", want, body)
	}
}

// webhookAnswers waits for the webhook server on the loopback port to
// answer path with 200 OK, trusting the certificate crt.
func webhookAnswers(t *testing.T, crt []byte, port int, path string) {
	t.Helper()
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
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A flood of large admission bodies is shed, not queued, and a small
// request (a Mirror of a few KiB) is answered through it: with sixty
// bodies of 6.9 MiB sent at once and those admitted held in the handler,
// every other large one gets 503 without waiting for its context, a small
// one gets through, and one of 7 MiB is refused unread with 413.
func TestGuardWebhookShedsAFloodOfLargeBodies(t *testing.T) {
	m := newManager(t, env.Namespace(t), manager.Options{Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: 1, CertDir: t.TempDir()}})
	release := make(chan struct{})
	var held atomic.Int32
	h := m.GuardWebhook(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > 256<<10 {
			held.Add(1)
			<-release
		}
	}))
	// Generous: a request that waits for its context (as before) fails
	// the test rather than hanging it.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	serve := func(length int64) (int, string) {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/validate-x", http.NoBody)
		r.ContentLength = length
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	const flood, large = 60, 69 << 20 / 10
	type answer struct {
		code int
		body string
	}
	answers := make(chan answer, flood)
	for range flood {
		go func() {
			code, body := serve(large)
			answers <- answer{code, body}
		}()
	}
	shed := 0
	for shed+int(held.Load()) < flood {
		a := <-answers
		if a.code != http.StatusServiceUnavailable || strings.Contains(a.body, "context") {
			t.Fatalf("a large body of the flood: %d %s, want 503 at once", a.code, a.body)
		}
		shed++
	}
	if code, body := serve(4 << 10); code != http.StatusOK {
		t.Errorf("a small request with the flood in flight: %d %s, want 200", code, body)
	}
	if code, _ := serve(7 << 20); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a 7 MiB request: %d, want 413", code)
	}
	close(release)
	for range held.Load() {
		if a := <-answers; a.code != http.StatusOK {
			t.Errorf("an admitted large body: %d %s, want 200", a.code, a.body)
		}
	}
	t.Logf("of %d large bodies at once, %d were shed", flood, shed)
}

// A body that stops arriving is cut off by its read deadline, a few
// seconds plus its length at 1 MiB/s, and gives its share back.
func TestGuardWebhookCutsOffASlowBody(t *testing.T) {
	m := newManager(t, env.Namespace(t), manager.Options{Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: 1, CertDir: t.TempDir()}})
	readErr := make(chan error, 1)
	srv := httptest.NewUnstartedServer(m.GuardWebhook(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	})))
	srv.StartTLS()
	defer srv.Close()
	conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test's own server
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /validate-x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{")
	// Generous beside the 5 s bound, and short of the 30 s that held a
	// share before.
	select {
	case err := <-readErr:
		if err == nil {
			t.Fatal("the stalled body was read whole")
		}
		t.Logf("the stalled body's read failed: %v", err)
	case <-time.After(25 * time.Second):
		t.Fatal("a stalled body of 4 KiB was still being read after 25 s")
	}
}

// With StartOnRegister the webhook server waits for its first handler, as
// controller-runtime's does: lws registers its webhooks once
// cert-controller has made the certificate, which is not there at Start.
// Meanwhile /readyz says why it is not ready; the first handler starts
// the server, and one registered without a certificate fails the manager
// as Start would have.
func TestWebhookStartOnRegister(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	m := newManager(t, env.Namespace(t), manager.Options{Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: port, CertDir: dir, StartOnRegister: true}})
	s := start(t, m)
	eventually(t, "/readyz to wait for a webhook handler", func() bool {
		code, body := get(t, "http://"+m.HealthProbeAddr()+"/readyz?verbose=1")
		return code == http.StatusInternalServerError && strings.Contains(body, "no webhook handler is registered yet")
	})

	crt, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{manager.WebhookCertFile: crt, manager.WebhookKeyFile: key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const path = "/validate-start-on-register"
	m.WebhookServer().Register(path, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	webhookAnswers(t, crt, port, path)
	eventually(t, "/readyz to pass", func() bool {
		code, _ := get(t, "http://"+m.HealthProbeAddr()+"/readyz")
		return code == http.StatusOK
	})
	if err := s.stop(t); err != nil {
		t.Errorf("Start = %v", err)
	}

	// Registered while no certificate is there: the manager stops.
	m = newManager(t, env.Namespace(t), manager.Options{Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: freePort(t), CertDir: t.TempDir(), StartOnRegister: true}})
	s = start(t, m)
	m.WebhookServer().Register(path, http.NotFoundHandler())
	select {
	case err := <-s.done:
		s.done <- err // for stop at cleanup
		if !errors.Is(err, manager.ErrNoWebhookCertificate) {
			t.Errorf("Start = %v, want an error wrapping ErrNoWebhookCertificate", err)
		}
	case <-time.After(time.Minute):
		t.Error("a handler registered without a certificate did not stop the manager within a minute")
	}
}
