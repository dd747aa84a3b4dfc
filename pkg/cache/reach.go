package cache

import (
	"context"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// probeInterval is how often a cache that found the API server out of
// reach asks its /readyz whether it is back.
const probeInterval = 500 * time.Millisecond

// reach keeps the informers of a cache from backing off while the API
// server is out of reach. client-go's reflector waits after each failed
// list or watch, doubling the wait up to 30 s, so after a minute-long
// outage an informer may not try again for half a minute after the API
// server's return. Instead, once a list or watch fails to connect, the
// informers' next lists and watches wait here, and one of them asks the
// API server's /readyz every probeInterval; when it answers, they all go
// on at once. Safe for concurrent use.
type reach struct {
	probe func(ctx context.Context) bool // reports whether the API server answers

	mu sync.Mutex
	// Invariant: up is nil while the API server is taken to be in reach;
	// otherwise it is closed once a probe finds it back.
	up chan struct{}
	// probing is whether a waiter is probing; left is closed when it
	// stops without finding the API server back, so another takes over.
	probing bool
	left    chan struct{}
}

// newReach returns a reach that probes the API server cfg points at
// through hc.
func newReach(cfg *rest.Config, hc *http.Client, codecs serializer.CodecFactory) (*reach, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.NegotiatedSerializer = codecs.WithoutConversion()
	rc, err := rest.UnversionedRESTClientForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return &reach{probe: func(ctx context.Context) bool {
		ctx, cancel := context.WithTimeout(ctx, probeInterval)
		defer cancel()
		var code int
		rc.Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
		// Any answer but a server error: a cluster may refuse /readyz to
		// this user, and its lists can still succeed.
		return code != 0 && code < http.StatusInternalServerError
	}}, nil
}

// failed notes the error of a list or watch: one that did not connect
// marks the API server out of reach.
func (r *reach) failed(ctx context.Context, err error) {
	if r == nil || err == nil || ctx.Err() != nil || !isConnectionError(err) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.up == nil {
		r.up = make(chan struct{})
	}
}

// wait returns at once while the API server is taken to be in reach;
// otherwise once a probe finds it back, or with ctx's error.
func (r *reach) wait(ctx context.Context) error {
	if r == nil {
		return nil
	}
	for {
		r.mu.Lock()
		up, left := r.up, r.left
		lead := up != nil && !r.probing
		if lead {
			r.probing, r.left = true, make(chan struct{})
		}
		r.mu.Unlock()
		switch {
		case up == nil:
			return nil
		case lead:
			return r.probeUntilUp(ctx)
		}
		select {
		case <-up:
			return nil
		case <-left:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// probeUntilUp probes every probeInterval until the API server answers,
// then releases every waiter; or stops with ctx's error and lets another
// waiter probe.
func (r *reach) probeUntilUp(ctx context.Context) error {
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for {
		if r.probe(ctx) {
			r.mu.Lock()
			close(r.up)
			r.up, r.probing = nil, false
			close(r.left)
			r.mu.Unlock()
			return nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			r.mu.Lock()
			r.probing = false
			close(r.left)
			r.mu.Unlock()
			return ctx.Err()
		}
	}
}
