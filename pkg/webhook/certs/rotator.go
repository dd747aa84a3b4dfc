package certs

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ErrNotReady is wrapped by Ready's error until the serving certificate is
// on disk and the Targets carry its CA.
var ErrNotReady = errors.New("webhook certificates not ready")

// Rotator keeps a webhook server's certificates valid: the CA in its
// Secret, the serving certificate in its CertDir and the CA bundle in its
// Targets. Its methods are safe for concurrent use.
type Rotator struct {
	opts    Options
	hosts   []string
	client  kubernetes.Interface
	dynamic dynamic.Interface
	started atomic.Bool

	// syncMu serializes Sync, so two syncs never write the CertDir at once.
	syncMu sync.Mutex

	mu sync.Mutex
	// serving is the certificate last written or found valid in CertDir;
	// nil until the first sync succeeded.
	serving *x509.Certificate
	lastErr error
	// ready is closed when serving is first set.
	ready chan struct{}
}

// New validates opts and returns a Rotator that talks to the API server of
// cfg. It does nothing until Start or Sync. The error wraps
// ErrInvalidOptions for options it cannot work with.
func New(cfg *rest.Config, opts Options) (*Rotator, error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("create certificate rotator: %w", err)
	}
	if cfg == nil {
		return nil, fmt.Errorf("create certificate rotator: %w: no REST config", ErrInvalidOptions)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create certificate rotator: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create certificate rotator: %w", err)
	}
	return &Rotator{opts: opts, hosts: opts.hosts(), client: client, dynamic: dyn, ready: make(chan struct{})}, nil
}

// Start syncs (see Sync) now, then whenever a certificate is due and every
// ResyncInterval, until ctx ends; after a failed sync it tries again within
// seconds. It returns nil when ctx ends: a failed sync is logged and shown
// by Ready, never returned, so an API server that is briefly away does not
// stop the operator. It runs on every replica, leader or not.
func (r *Rotator) Start(ctx context.Context) error {
	if !r.started.CompareAndSwap(false, true) {
		return errors.New("certs: Rotator.Start called twice")
	}
	for {
		next, err := r.sync(ctx)
		if ctx.Err() != nil {
			return nil
		}
		wait := next.Sub(r.opts.Clock.Now())
		if err != nil {
			r.opts.Logger.Error(err, "sync webhook certificates")
			wait = min(retryInterval, r.opts.ResyncInterval)
		}
		t := r.opts.Clock.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// NeedLeaderElection reports false: the API server calls every replica's
// webhook server, so every replica needs its certificate.
func (r *Rotator) NeedLeaderElection() bool { return false }

// Sync brings the CA, the Targets' caBundles and the serving certificate up
// to date once, in that order, so that the API server trusts a new CA
// before any replica serves a certificate it signed. Start calls it on
// every tick.
func (r *Rotator) Sync(ctx context.Context) error {
	_, err := r.sync(ctx)
	return err
}

// sync returns when the next sync is due.
func (r *Rotator) sync(ctx context.Context) (time.Time, error) {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	next := r.opts.Clock.Now().Add(r.opts.ResyncInterval)
	a, err := r.ensureCA(ctx)
	if err == nil {
		err = r.patchTargets(ctx, a.bundle)
	}
	var serving *x509.Certificate
	if err == nil {
		serving, err = r.ensureServing(a)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastErr = err
	if err != nil {
		return next, err
	}
	if r.serving == nil {
		close(r.ready)
	}
	r.serving = serving
	return earliest(next, renewAt(serving), renewAt(a.ca.cert)), nil
}

func earliest(t time.Time, ts ...time.Time) time.Time {
	for _, u := range ts {
		if u.Before(t) {
			t = u
		}
	}
	return t
}

// ensureServing keeps the certificate in CertDir if a's CA signed it for
// exactly the wanted hosts and it is not due, and writes a new one
// otherwise.
func (r *Rotator) ensureServing(a *authority) (*x509.Certificate, error) {
	now := r.opts.Clock.Now()
	if kp, err := readPair(r.opts.CertDir); err == nil && r.current(kp.cert, a, now) {
		return kp.cert, nil
	}
	kp, err := newServing(now, r.opts.CertLifetime, a.ca, r.hosts)
	if err != nil {
		return nil, err
	}
	if err := writePair(r.opts.CertDir, kp.certPEM, kp.keyPEM); err != nil {
		return nil, err
	}
	r.opts.Logger.Info("wrote serving certificate", "dir", r.opts.CertDir, "hosts", r.hosts, "notAfter", kp.cert.NotAfter)
	return kp.cert, nil
}

func (r *Rotator) current(c *x509.Certificate, a *authority, now time.Time) bool {
	if !now.Before(renewAt(c)) {
		return false
	}
	roots := x509.NewCertPool()
	roots.AddCert(a.ca.cert)
	_, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return false
	}
	var have []string
	have = append(have, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		have = append(have, ip.String())
	}
	want := make([]string, 0, len(r.hosts))
	for _, h := range r.hosts {
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		want = append(want, h)
	}
	slices.Sort(have)
	slices.Sort(want)
	return slices.Equal(have, want)
}

// Ready returns nil once a sync succeeded and while the serving certificate
// it left is valid; otherwise an error wrapping ErrNotReady and saying why.
// A later failed sync does not make it fail: the certificate on disk and
// the caBundles already patched keep serving.
func (r *Rotator) Ready() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.serving == nil && r.lastErr != nil:
		return fmt.Errorf("%w: %w", ErrNotReady, r.lastErr)
	case r.serving == nil:
		return fmt.Errorf("%w: not synced yet", ErrNotReady)
	case !r.opts.Clock.Now().Before(r.serving.NotAfter):
		return errors.Join(fmt.Errorf("%w: serving certificate expired at %s", ErrNotReady, r.serving.NotAfter), r.lastErr)
	}
	return nil
}

// Check is Ready as a health check for a /readyz endpoint.
func (r *Rotator) Check(*http.Request) error { return r.Ready() }

// WaitReady blocks until the first sync succeeded, for a webhook server
// that must not start before its certificate is on disk, or until ctx
// ends, returning its cause.
func (r *Rotator) WaitReady(ctx context.Context) error {
	select {
	case <-r.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for webhook certificates: %w", context.Cause(ctx))
	}
}
