package controller

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/internal/consistency"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// pendingWrites holds a key back, before a reconcile, until the cache has
// caught up with the writes of the key's last reconcile, for
// read-your-writes. A key held back is parked: it leaves the queue and
// holds no worker while it waits, so that the other keys go on being
// reconciled; it is queued again when the cache has caught up or the wait
// has timed out.
type pendingWrites[K comparable] struct {
	timeout                      time.Duration
	caughtUp, timedOut, canceled prometheus.Observer
	keys                         consistency.PerKey[K]

	mu     sync.Mutex
	parked map[K]parked // keys waiting
	// waiting is len(parked), for park's fast path: a key is parked before
	// the worker that parked it lets it go, so a worker handed the key
	// again reads at least 1.
	waiting atomic.Int64
}

// parked is how a key waiting for the cache is queued again: with the
// highest priority and the earliest change time it was handed out with
// while it waited.
type parked struct {
	priority int
	changed  time.Time
}

func newPendingWrites[K comparable](name string, timeout time.Duration, wait *prometheus.HistogramVec) *pendingWrites[K] {
	return &pendingWrites[K]{
		timeout:  timeout,
		caughtUp: wait.WithLabelValues(name, imetrics.WaitCaughtUp),
		timedOut: wait.WithLabelValues(name, imetrics.WaitTimeout),
		canceled: wait.WithLabelValues(name, imetrics.WaitCanceled),
		parked:   map[K]parked{},
	}
}

// park reports whether key, just handed out by q with priority and the
// change time changed, must wait
// for the cache before it is reconciled. If so, the worker lets it go (Done)
// without reconciling it, and a goroutine waits, at most p.timeout, then
// queues it again with the highest priority and earliest change time it
// was handed out with meanwhile. A key handed out again while it waits is let go too: its wait
// queues it. log is the controller's logger; the key's values are added
// to it only for a key that waits. ctx ends the waits; the queue has shut down by then, so
// nothing is queued and the sources queue every key again at the next
// start.
func (p *pendingWrites[K]) park(ctx context.Context, log logr.Logger, q *queue.Queue[K], key K, priority int, changed time.Time) bool {
	if p.waiting.Load() == 0 && p.keys.Empty() {
		return false // the common case: no key waits, and none wrote what the cache lacks
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if prev, ok := p.parked[key]; ok {
		prev.priority = max(prev.priority, priority)
		if prev.changed.IsZero() || !changed.IsZero() && changed.Before(prev.changed) {
			prev.changed = changed
		}
		p.parked[key] = prev
		return true
	}
	last := p.keys.Take(key)
	if last == nil || !last.Pending() {
		return false
	}
	p.parked[key] = parked{priority: priority, changed: changed}
	p.waiting.Store(int64(len(p.parked)))
	log = log.WithValues(appendKeyValues(nil, key)...)
	go func() {
		p.wait(logr.NewContext(ctx, log), last)
		p.mu.Lock()
		pk := p.parked[key]
		delete(p.parked, key)
		p.waiting.Store(int64(len(p.parked)))
		p.mu.Unlock()
		q.AddWithOpts(queue.AddOpts{Priority: pk.priority, Changed: pk.changed}, key)
	}()
	return true
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
