package budget

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// The API server's priority and fairness limits how many of a priority
// level's requests it serves at once, not how many it serves a second: a
// level of one seat rejects the second of two requests that overlap, at
// any rate. A 429 that carries the priority-and-fairness headers therefore
// narrows a window of requests in flight, not the rate: the window halves
// (once per window of requests: the 429s of requests let in before the
// last narrowing were sent under the wider window, and do not count
// again), then widens by one request each probe
// interval without a pushback. A probe that draws a pushback doubles the
// interval (up to maxProbe), so a client at the server's limit probes it
// rarely; a widening that holds for two intervals halves it again (down to
// minProbe). Once the window is wider than the requests ever in flight
// for liftAfter without a pushback, it lifts. Leases and watches never
// count: a watch holds no seat once it streams. A request of an urgent
// lane (a lease renewal, a health check's) waits only for the first room:
// it goes ahead of every other waiter.
//
// The window starts at initialWindow and widens by one with each answer
// that is not a 429 while the window is full (doubling as fast as
// requests come back: TCP's slow start) until it lifts at liftWindow, so that an operator whose many
// workers start at once sends at most initialWindow requests into a
// level that rejects them, and one whose server never pushes back is
// unlimited within a few dozen answers.
const (
	initialWindow = 4
	liftWindow    = 64
	minProbe      = time.Second
	maxProbe      = 16 * time.Second
)

// window is the budget's limit on requests in flight. Its methods are
// safe for concurrent use.
type window struct {
	mu       sync.Mutex
	limit    float64 // +Inf: none
	inFlight int
	peak     int // the most in flight since the last pushback or widening
	waiters  []chan struct{}
	// reserved counts the rooms workers hold for their reconciles' first
	// requests (see reserve); reservers are the workers waiting for one.
	reserved  int
	reservers []chan struct{}

	epoch        int // narrowings so far
	lastDecrease time.Time
	lastChange   time.Time // of the last widening or narrowing
	probe        time.Duration
	probed       bool // the last change was a widening
	slowStart    bool // no pushback yet: each answer widens by one

	// narrowed is whether a pushback narrowed the window and it has not
	// lifted since, for Narrowed to read without the lock.
	narrowed atomic.Bool
}

// Narrowed reports whether priority and fairness's 429s narrowed the
// window and it has not lifted since: while it is, workers wait for room
// before they take a key (see Prepaid). The slow start's window does not
// count: it widens with every answer.
func (w *window) Narrowed() bool { return w.narrowed.Load() }

func newWindow() *window { return &window{limit: initialWindow, probe: minProbe, slowStart: true} }

// answered widens the window by one in slow start, for an answer that was
// not a pushback while the window was full, and lifts it at liftWindow.
func (w *window) answered() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.slowStart || float64(w.inFlight) < w.limit {
		return
	}
	if w.limit++; w.limit >= liftWindow {
		w.limit, w.slowStart = math.Inf(1), false
	}
	w.admit()
}

// reserve waits until the window has room beyond the requests in flight
// and the rooms reserved, with no request waiting, and reserves it for a
// worker's reconcile's first request (acquire with reserved), or returns
// ctx's error, having reserved nothing. A reserved room holds up other
// workers' reserve, never a request: a reconcile may wait long before its
// first request (at a fence for the lease's renewal, for an informer's
// list), and the requests it waits for must not wait for it. unreserve
// gives back a room no request spent.
func (w *window) reserve(ctx context.Context, clock func() time.Time) error {
	w.mu.Lock()
	w.adapt(clock())
	if len(w.waiters) == 0 && len(w.reservers) == 0 && float64(w.inFlight+w.reserved) < w.limit {
		w.reserved++
		w.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	w.reservers = append(w.reservers, ready)
	w.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, c := range w.reservers {
		if c == ready {
			w.reservers = append(w.reservers[:i], w.reservers[i+1:]...)
			return context.Cause(ctx)
		}
	}
	// Reserved as ctx ended: pass the room on.
	w.reserved--
	w.admit()
	return context.Cause(ctx)
}

// unreserve gives back a room reserve reserved and no request spent.
func (w *window) unreserve() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reserved--
	w.admit()
}

// acquire waits for room in the window and returns its release, which
// may be called more than once, and the window's epoch when it let the
// request in; or ctx's error, having taken nothing. An urgent request,
// and one that spends a room reserved for it (reserved), go ahead of the
// others waiting; a request waits for the requests in flight only, never
// for the rooms reserved.
func (w *window) acquire(ctx context.Context, clock func() time.Time, urgent, reserved bool) (func(), int, error) {
	w.mu.Lock()
	w.adapt(clock())
	if reserved {
		w.reserved--
		urgent = true
	}
	if (urgent || len(w.waiters) == 0) && float64(w.inFlight) < w.limit {
		w.inFlight++
		w.peak = max(w.peak, w.inFlight)
		epoch := w.epoch
		w.mu.Unlock()
		return w.releaser(clock), epoch, nil
	}
	ready := make(chan struct{})
	if urgent {
		w.waiters = append([]chan struct{}{ready}, w.waiters...)
	} else {
		w.waiters = append(w.waiters, ready)
	}
	w.mu.Unlock()
	select {
	case <-ready:
		w.mu.Lock()
		epoch := w.epoch
		w.mu.Unlock()
		return w.releaser(clock), epoch, nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, c := range w.waiters {
		if c == ready {
			w.waiters = append(w.waiters[:i], w.waiters[i+1:]...)
			return nil, 0, context.Cause(ctx)
		}
	}
	// Let in as ctx ended: pass the room on.
	w.inFlight--
	w.admit()
	return nil, 0, context.Cause(ctx)
}

// releaser returns the release of a request let in now; it adapts the
// window as it releases, since while every request waits in the window
// no acquire comes to.
func (w *window) releaser(clock func() time.Time) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.inFlight--
			w.adapt(clock())
			w.admit()
		})
	}
}

// admit lets waiting requests in while there is room, then reserves
// rooms for waiting workers while there is room beyond the requests in
// flight and the rooms reserved. w.mu is held.
func (w *window) admit() {
	for len(w.waiters) > 0 && float64(w.inFlight) < w.limit {
		c := w.waiters[0]
		w.waiters = w.waiters[1:]
		w.inFlight++
		w.peak = max(w.peak, w.inFlight)
		close(c)
	}
	for len(w.waiters) == 0 && len(w.reservers) > 0 && float64(w.inFlight+w.reserved) < w.limit {
		c := w.reservers[0]
		w.reservers = w.reservers[1:]
		w.reserved++
		close(c)
	}
}

// pushedBack narrows the window to half the requests in flight (at least
// one) for the pushback of a request let in at epoch, unless the window
// narrowed since, and reports whether it changed.
func (w *window) pushedBack(now time.Time, epoch int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if epoch < w.epoch {
		return false
	}
	w.epoch++
	w.slowStart = false
	if w.probed && now.Sub(w.lastChange) < w.probe {
		w.probe = min(2*w.probe, maxProbe) // the last widening went too far
	}
	w.limit = max(1, math.Floor(min(w.limit, float64(w.inFlight))/2))
	w.lastDecrease, w.lastChange, w.probed, w.peak = now, now, false, w.inFlight
	w.narrowed.Store(true)
	return true
}

// adapt widens the window by one once a probe interval passed since it
// last changed, and lifts it once it has not bound for liftAfter. w.mu is
// held.
func (w *window) adapt(now time.Time) {
	if w.slowStart || math.IsInf(w.limit, 1) || now.Sub(w.lastChange) < w.probe {
		return
	}
	if w.probed && now.Sub(w.lastChange) >= 2*w.probe {
		w.probe = max(w.probe/2, minProbe) // the last widening held
	}
	if now.Sub(w.lastDecrease) >= liftAfter && float64(w.peak) < w.limit {
		w.limit = math.Inf(1)
		w.narrowed.Store(false)
		w.admit()
		return
	}
	w.limit++
	w.lastChange, w.probed, w.peak = now, true, w.inFlight
	w.admit()
}

// Limit returns the window's limit on requests in flight; +Inf for none.
func (w *window) Limit() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.limit
}
