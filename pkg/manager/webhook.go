package manager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/opkit-dev/opkit/internal/bodybudget"
)

// WebhookOptions configure the admission webhook server, which is
// controller-runtime's webhook.Server run by the manager. The zero value
// means no webhook server.
//
// Start runs the webhook server with the HTTP servers, before the cache
// and on every replica, leader or not, since the API server calls any of
// them; it stops last, with the HTTP servers. /readyz has a check named
// "webhook" that fails until it serves TLS. A CertDir without tls.crt and
// tls.key fails Start at once (ErrNoWebhookCertificate), naming both
// files. StartOnRegister defers both to the first handler registered.
type WebhookOptions struct {
	// Port is the port the webhook server serves HTTPS on, such as 9443
	// (kubebuilder's). Defaults to 0: no webhook server. A free port cannot
	// be asked for with 0, since the API server must be told the port.
	Port int
	// Host is the address it listens on, such as "127.0.0.1". Defaults to
	// "": every address.
	Host string
	// CertDir holds the serving certificate, tls.crt and tls.key (PEM), as a
	// kubernetes.io/tls Secret mounted there provides them; a new pair
	// written there is picked up without a restart. Defaults to
	// DefaultWebhookCertDir(), where kubebuilder's config mounts it.
	CertDir string
	// GetCertificate, when set, supplies the serving certificate instead of
	// CertDir, for certificates kept in memory. A handshake it fails fails,
	// and /readyz with it. Defaults to nil: CertDir.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// TLSOpts change the server's TLS configuration, such as its minimum
	// version or (as kubebuilder's main does) NextProtos to turn HTTP/2 off.
	// Set a certificate with GetCertificate, not here: the manager checks
	// CertDir unless GetCertificate is set. Defaults to none.
	TLSOpts []func(*tls.Config)
	// ClientCAFile is a PEM bundle of the CAs whose client certificates
	// the server accepts, such as the CA of the certificate the API server
	// presents to admission webhooks (its AdmissionConfiguration's
	// kubeConfigFile; docs/webhooks.md). With it, the server asks every
	// client for a certificate and fails the TLS handshake of one whose
	// certificate does not verify; a client without one is refused with
	// 403 on the paths wrapped by GuardWebhook, which package
	// webhook's admission paths are, but not on /convert, since the API
	// server's CRD conversion presents no certificate. It is read once, by
	// New. Defaults to "": no client certificate is asked for.
	ClientCAFile string
	// StartOnRegister defers the server's start, and the check of its
	// certificate, from Start to the first handler registered on it, as
	// controller-runtime's manager starts its webhook server when the
	// first webhook asks for it. A project that registers its webhooks
	// only once a certificate rotator has made the certificate (lws, with
	// cert-controller) needs it; crport.ManagerOptions sets it. With a
	// handler registered before Start, Start checks the certificate as
	// without it. Until the server starts, /readyz's "webhook" check fails
	// saying that no handler is registered. Defaults to false: Start
	// starts the server.
	StartOnRegister bool
}

// DefaultWebhookCertDir returns where the webhook server looks for its
// certificate by default: <os.TempDir()>/k8s-webhook-server/serving-certs,
// as in controller-runtime and kubebuilder's config.
func DefaultWebhookCertDir() string {
	return filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
}

// Names of the certificate files in WebhookOptions.CertDir.
const (
	WebhookCertFile = "tls.crt"
	WebhookKeyFile  = "tls.key"
)

// ErrNoWebhookCertificate: Start found no usable certificate in
// Options.Webhook.CertDir.
var ErrNoWebhookCertificate = errors.New("no webhook serving certificate")

func (o WebhookOptions) enabled() bool { return o.Port != 0 }

func (o WebhookOptions) validate() error {
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("Options.Webhook.Port is %d: want a port from 1 to 65535, such as 9443, or 0 for no webhook server", o.Port)
	}
	if !o.enabled() && (o.Host != "" || o.CertDir != "" || o.GetCertificate != nil || len(o.TLSOpts) > 0 || o.ClientCAFile != "" || o.StartOnRegister) {
		return errors.New("Options.Webhook.Port is 0, which turns the webhook server off, but other Options.Webhook fields are set: set the port, such as 9443")
	}
	return nil
}

func (o WebhookOptions) withDefaults() WebhookOptions {
	if o.enabled() && o.CertDir == "" {
		o.CertDir = DefaultWebhookCertDir()
	}
	return o
}

// newWebhookServer makes the webhook server and its readiness check, when
// Options.Webhook asks for one.
func (m *Manager) newWebhookServer() error {
	o := m.opts.Webhook
	if !o.enabled() {
		return nil
	}
	tlsOpts := o.TLSOpts[:len(o.TLSOpts):len(o.TLSOpts)]
	if o.GetCertificate != nil {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.GetCertificate = o.GetCertificate })
	}
	if o.ClientCAFile != "" {
		pool, err := readClientCAs(o.ClientCAFile)
		if err != nil {
			return err
		}
		// Not RequireAndVerifyClientCert: the API server calls /convert
		// without a certificate.
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.ClientCAs, c.ClientAuth = pool, tls.VerifyClientCertIfGiven })
	}
	m.admissionBodies = bodybudget.New(admissionBudget, maxAdmissionBody)
	m.webhook = crwebhook.NewServer(crwebhook.Options{
		Host:     o.Host,
		Port:     o.Port,
		CertDir:  o.CertDir,
		CertName: WebhookCertFile,
		KeyName:  WebhookKeyFile,
		TLSOpts:  tlsOpts,
	})
	// The check dials the server and completes a TLS handshake: it fails
	// until the server serves TLS, and while no certificate is available.
	started := m.webhook.StartedChecker()
	return m.ready.add("webhook", func(r *http.Request) error {
		if !m.webhookDue() {
			return errors.New("no webhook handler is registered yet: the server starts with the first (Options.Webhook.StartOnRegister)")
		}
		return started(r)
	})
}

func readClientCAs(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("manager: Options.Webhook.ClientCAFile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("manager: Options.Webhook.ClientCAFile: %s holds no PEM certificate", file)
	}
	return pool, nil
}

// Bounds of GuardWebhook: the admission handler (controller-runtime's)
// reads at most maxAdmissionBody of a request, and the requests being
// handled at once hold at most admissionBudget of bodies between them
// (package bodybudget: a reserved lane for small bodies, large ones shed
// when the rest is taken, a read deadline scaled by size).
const (
	maxAdmissionBody = 7 << 20
	admissionBudget  = 2 * maxAdmissionBody
)

// GuardWebhook returns h behind what every admission path of the webhook
// server needs, before h reads the request:
//
//   - with Options.Webhook.ClientCAFile, a request without a client
//     certificate that it verifies is refused with 403 Forbidden (one
//     that does not verify fails its TLS handshake before this);
//   - a Content-Length of 7 MiB or more (the admission handler's limit) is
//     refused with 413 unread;
//   - the bodies of the requests being handled at once, on every path
//     GuardWebhook wraps, stay within 14 MiB, of which 2 MiB only bodies
//     of at most 256 KiB may hold: a larger body (or one of unknown
//     length) that finds the rest taken gets 503 Service Unavailable at
//     once, unread, and a small one waits for room until its context
//     ends, so that a flood of large bodies is shed while a Mirror of a
//     few KiB is answered;
//   - an admitted body must arrive within 5 s plus 1 s per MiB of its
//     length, or its reads fail, so that a client trickling its body
//     gives its share back within seconds.
//
// Package webhook wraps its admission paths with it.
func (m *Manager) GuardWebhook(h http.Handler) http.Handler {
	requireCert := m.opts.Webhook.ClientCAFile != ""
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requireCert && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			http.Error(w, "a client certificate signed by the webhook server's client CA is required", http.StatusForbidden)
			return
		}
		if r.ContentLength >= maxAdmissionBody {
			http.Error(w, fmt.Sprintf("request entity is too large; limit is %d bytes", maxAdmissionBody), http.StatusRequestEntityTooLarge)
			return
		}
		release, err := m.admissionBodies.Admit(w, r)
		if err != nil {
			http.Error(w, fmt.Sprintf("too many admission requests in flight: %v", err), http.StatusServiceUnavailable)
			return
		}
		defer release()
		h.ServeHTTP(w, r)
	})
}

// WebhookServer returns the admission webhook server, on which package
// webhook registers handlers, or nil when Options.Webhook.Port is 0.
// Handlers may be registered before or after Start.
func (m *Manager) WebhookServer() crwebhook.Server {
	if m.webhook == nil || !m.opts.Webhook.StartOnRegister {
		return m.webhook
	}
	return registering{m.webhook, m}
}

// checkWebhookCertificate fails Start at once, naming the files it wants,
// when the webhook server would find no certificate in CertDir.
func (m *Manager) checkWebhookCertificate() error {
	o := m.opts.Webhook
	if !o.enabled() || o.GetCertificate != nil || !m.webhookDue() {
		return nil
	}
	crt, key := filepath.Join(o.CertDir, WebhookCertFile), filepath.Join(o.CertDir, WebhookKeyFile)
	if _, err := tls.LoadX509KeyPair(crt, key); err != nil {
		return fmt.Errorf("manager: webhook server: load %s and %s (PEM) from Options.Webhook.CertDir: mount a kubernetes.io/tls Secret there, or set Options.Webhook.GetCertificate: %w: %w",
			crt, key, ErrNoWebhookCertificate, err)
	}
	return nil
}

// serveWebhook starts the webhook server, which runs on every replica,
// leader or not, detached from ctx until the returned stop.
//
// With Options.Webhook.StartOnRegister and no handler yet, it starts the
// server when the first is registered, unless the manager has stopped.
func (m *Manager) serveWebhook(ctx context.Context, fail func(error)) stopFunc {
	if m.webhook == nil {
		return noStop
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	run := func() {
		defer close(done)
		if err := m.checkWebhookCertificate(); err != nil {
			fail(err)
			return
		}
		m.log.Info("Serving", "server", "webhook", "address", net.JoinHostPort(m.opts.Webhook.Host, strconv.Itoa(m.opts.Webhook.Port)))
		if err := m.webhook.Start(ctx); err != nil {
			fail(fmt.Errorf("manager: webhook server on port %d (Options.Webhook.Port): %w", m.opts.Webhook.Port, err))
		}
	}
	d := &m.deferredWebhook
	d.mu.Lock()
	if m.webhookDueLocked() {
		d.running = true
		go run()
	} else {
		d.start = func() { go run() }
		m.log.Info("The webhook server starts with its first handler (Options.Webhook.StartOnRegister)")
	}
	d.mu.Unlock()
	return func(stopCtx context.Context) error {
		d.mu.Lock()
		d.start = nil // a handler registered from now on starts nothing
		running := d.running
		d.mu.Unlock()
		cancel()
		if !running {
			return nil
		}
		select {
		case <-done:
			return nil
		case <-stopCtx.Done():
			return fmt.Errorf("manager: stop webhook server: %w", context.Cause(stopCtx))
		}
	}
}

// deferredWebhook is the webhook server's start, held until its first
// handler with Options.Webhook.StartOnRegister.
type deferredWebhook struct {
	mu       sync.Mutex
	handlers bool   // a handler was registered
	running  bool   // serveWebhook started the server
	start    func() // starts it, while serveWebhook waits for a handler
}

// webhookDue says whether the webhook server starts, or started, with
// Start: without Options.Webhook.StartOnRegister, or once a handler was
// registered.
func (m *Manager) webhookDue() bool {
	m.deferredWebhook.mu.Lock()
	defer m.deferredWebhook.mu.Unlock()
	return m.webhookDueLocked()
}

func (m *Manager) webhookDueLocked() bool {
	return !m.opts.Webhook.StartOnRegister || m.deferredWebhook.handlers
}

// registering is the webhook server with Options.Webhook.StartOnRegister:
// the first handler registered on it starts it, if Start is waiting.
type registering struct {
	crwebhook.Server
	m *Manager
}

func (s registering) Register(path string, h http.Handler) {
	s.Server.Register(path, h)
	d := &s.m.deferredWebhook
	d.mu.Lock()
	d.handlers = true
	start := d.start
	d.start = nil
	d.running = d.running || start != nil
	d.mu.Unlock()
	if start != nil {
		start()
	}
}
