package manager

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/cert"

	"github.com/opkit-dev/opkit/internal/metricsauth"
	"github.com/opkit-dev/opkit/pkg/cache"
)

// server is one HTTP server the manager runs, listening from Start.
type server struct {
	name     string
	listener net.Listener
	srv      *http.Server
}

// listen opens the manager's servers, so that an address in use fails
// Start before anything else runs.
func (m *Manager) listen() ([]*server, error) {
	var out []*server
	closeAll := func() {
		for _, s := range out {
			_ = s.listener.Close()
		}
	}
	if addr := m.opts.Metrics.BindAddress; addr != "0" {
		s, err := m.metricsServer(addr)
		if err != nil {
			closeAll()
			return nil, err
		}
		out = append(out, s)
	}
	if addr := m.opts.Health.BindAddress; addr != "" && addr != "0" {
		mux := http.NewServeMux()
		mux.Handle("/healthz", m.health)
		mux.Handle("/healthz/", m.health)
		mux.Handle("/readyz", m.ready)
		mux.Handle("/readyz/", m.ready)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("manager: serve health probes on %s (Options.Health.BindAddress): %w", addr, err)
		}
		out = append(out, &server{name: "health probes", listener: ln, srv: newHTTPServer(mux)})
	}
	return out, nil
}

func (m *Manager) metricsServer(addr string) (*server, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.gatherer(), promhttp.HandlerOpts{ErrorLog: nil}))
	mux.HandleFunc("/debug/holds", m.serveHolds)
	if m.opts.Metrics.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	var handler http.Handler = mux
	var tlsConfig *tls.Config
	if m.opts.Metrics.Secure {
		a := m.opts.Metrics.Auth
		handler = metricsauth.New(m.clientset, mux, metricsauth.Options{
			TTL: a.TTL, FailureTTL: a.FailureTTL, CacheSize: a.CacheSize,
			TokenReviewsPerSecond: a.TokenReviewsPerSecond, TokenReviewBurst: a.TokenReviewBurst,
			Logger: m.log.WithName("metrics-auth"),
		})
		c, err := m.certificate()
		if err != nil {
			return nil, err
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("manager: serve metrics on %s (Options.Metrics.BindAddress; \"0\" turns it off): %w", addr, err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	return &server{name: "metrics", listener: ln, srv: newHTTPServer(handler)}, nil
}

// hold is one entry of /debug/holds: the Listers one owner holds on one
// cached type and scope (cache.TypeStatus.Owners).
type hold struct {
	// Owner is cache.TypeOptions.Owner.
	Owner string                  `json:"owner"`
	GVK   schema.GroupVersionKind `json:"gvk"`
	// Form is "typed", "metadata" or "unstructured".
	Form string `json:"form"`
	// Namespaces the type is cached in; empty for every namespace.
	Namespaces []string `json:"namespaces,omitempty"`
	// Selector is the label and field selector, if any.
	Selector string `json:"selector,omitempty"`
	// Listers is how many of the owner's Listers hold the type.
	Listers int `json:"listers"`
}

// holds lists every named owner's holds in st, sorted by owner, then
// kind. Types held only without an owner are not listed.
func holds(st []cache.TypeStatus) []hold {
	out := []hold{}
	for _, s := range st {
		for owner, n := range s.Owners {
			out = append(out, hold{Owner: owner, GVK: s.GVK, Form: s.Form, Namespaces: s.Namespaces, Selector: s.Selector, Listers: n})
		}
	}
	slices.SortFunc(out, func(a, b hold) int {
		return cmp.Or(cmp.Compare(a.Owner, b.Owner), cmp.Compare(a.GVK.String(), b.GVK.String()),
			cmp.Compare(a.Form, b.Form), slices.Compare(a.Namespaces, b.Namespaces), cmp.Compare(a.Selector, b.Selector))
	})
	return out
}

// serveHolds answers with who holds which cached type, as JSON (holds).
// It is served beside /metrics, behind the same authentication and
// authorization when Options.Metrics.Secure.
func (m *Manager) serveHolds(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(holds(m.cache.Status()))
}

func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 90 * time.Second}
}

// certificate loads tls.crt and tls.key from Options.Metrics.CertDir, or
// makes a self-signed one.
func (m *Manager) certificate() (tls.Certificate, error) {
	if dir := m.opts.Metrics.CertDir; dir != "" {
		c, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
		if err != nil {
			return c, fmt.Errorf("manager: load the metrics certificate from Options.Metrics.CertDir: %w", err)
		}
		return c, nil
	}
	host, _ := os.Hostname()
	crt, key, err := cert.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("manager: make a self-signed metrics certificate: %w", err)
	}
	return tls.X509KeyPair(crt, key)
}

// serve runs the manager's servers and the webhook server, on every
// replica, leader or not; the returned stop shuts them down.
func (m *Manager) serve(ctx context.Context, servers []*server, fail func(error)) stopFunc {
	for _, s := range servers {
		go s.serve(fail)
	}
	stopWebhook := m.serveWebhook(ctx, fail)
	return func(ctx context.Context) error {
		var errs []error
		for _, s := range servers {
			errs = append(errs, s.shutdown(ctx))
		}
		return errors.Join(append(errs, stopWebhook(ctx))...)
	}
}

// Addr returns where the server listens.
func (s *server) Addr() net.Addr { return s.listener.Addr() }

func (s *server) serve(fail func(error)) {
	if err := s.srv.Serve(s.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fail(fmt.Errorf("manager: %s server: %w", s.name, err))
	}
}

func (s *server) shutdown(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
		return fmt.Errorf("manager: stop %s server: %w", s.name, err)
	}
	return nil
}
