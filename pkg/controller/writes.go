package controller

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/pkg/consistency"
	"github.com/opkit-dev/opkit/pkg/metrics"
)

// pendingWrites waits, before a reconcile, for the cache to catch up
// with the writes of the key's last reconcile, for read-your-writes.
type pendingWrites[K comparable] struct {
	timeout                      time.Duration
	caughtUp, timedOut, canceled prometheus.Observer
	keys                         consistency.PerKey[K]
}

func newPendingWrites[K comparable](name string, timeout time.Duration, wait *prometheus.HistogramVec) *pendingWrites[K] {
	return &pendingWrites[K]{
		timeout:  timeout,
		caughtUp: wait.WithLabelValues(name, metrics.WaitCaughtUp),
		timedOut: wait.WithLabelValues(name, metrics.WaitTimeout),
		canceled: wait.WithLabelValues(name, metrics.WaitCanceled),
	}
}

// before waits, at most p.timeout, until the cache has caught up with the
// writes of key's last reconcile, and returns ctx carrying the Writes
// that records the writes of the reconcile about to run.
func (p *pendingWrites[K]) before(ctx context.Context, key K) (context.Context, *consistency.Writes) {
	if last := p.keys.Take(key); last != nil && last.Pending() {
		p.wait(ctx, last)
	}
	w := new(consistency.Writes)
	return consistency.NewContext(ctx, w), w
}

func (p *pendingWrites[K]) wait(ctx context.Context, w *consistency.Writes) {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	err := w.Wait(wctx)
	took := time.Since(start).Seconds()
	switch {
	case err == nil:
		p.caughtUp.Observe(took)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		p.timedOut.Observe(took)
		logr.FromContextOrDiscard(ctx).Info("The cache did not catch up with this key's earlier writes in time; reconciling with what it holds (a lagging or disconnected watch?)",
			"waited", p.timeout.String())
	default:
		p.canceled.Observe(took)
	}
}

// after keeps the writes of key's reconcile that the cache has not caught
// up with, for the key's next reconcile.
func (p *pendingWrites[K]) after(key K, w *consistency.Writes) { p.keys.Keep(key, w) }
