package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// Options configure New. The zero value is valid: no fixed rate, adapting
// to the server.
type Options struct {
	// QPS is the budget's rate in requests a second; 0 or negative: no
	// fixed rate (requests never wait until the server pushes back).
	QPS float64
	// Burst is how many requests may go at once after a quiet spell.
	// Defaults to 2×QPS (at least 1).
	Burst int
	// Registerer receives the budget's metrics (opkit_api_budget_*, or
	// as MetricNames names them). Defaults to none.
	Registerer prometheus.Registerer
	// MetricNames name the metrics. Defaults to the manager's budget's,
	// opkit_api_budget_* (ManagerMetricNames).
	MetricNames MetricNames
	// Weights, when set, gives a controller's weight in the reconcile
	// lane, asked each time its flow starts to wait, instead of
	// SetWeight's: a member cluster's budget takes the manager's weights.
	// It is called with the Budget's lock held, so it must not call into
	// this Budget.
	Weights func(controller string) float64
	// OnPushback, when set, is called (without the Budget's lock) after a
	// pushback changed the rate, with the new rate and what the server
	// said, for a log line.
	OnPushback func(Pushback)
	// Clock defaults to the system clock.
	Clock clock.WithDelayedExecution
}

// Reason is what made a Pushback: the label value of
// opkit_api_budget_pushbacks_total's reason.
type Reason string

// The reasons of a Pushback.
const (
	// ReasonTooManyRequests: a response with status 429.
	ReasonTooManyRequests Reason = "429"
	// ReasonRetryAfter: a response of another status with a Retry-After
	// header.
	ReasonRetryAfter Reason = "retry_after"
	// ReasonLatency: most requests answered in the last two seconds were
	// slow against their usual latency (docs/api-budget.md).
	ReasonLatency Reason = "latency"
)

// ErrClosed is wrapped by the error of a request that waited for a Budget
// when it was closed, or asked for it after.
var ErrClosed = errors.New("the API budget is closed")

var reasons = []Reason{ReasonTooManyRequests, ReasonRetryAfter, ReasonLatency}

// Pushback is what the API server said when it pushed back, or how slow
// it answered: Lane, Controller and the priority-and-fairness headers
// are those of the response that made it.
type Pushback struct {
	Reason     Reason
	Lane       Lane
	Controller string
	Status     int    // with ReasonTooManyRequests and ReasonRetryAfter
	RetryAfter string // with ReasonTooManyRequests and ReasonRetryAfter
	// Latency is, with ReasonLatency, the mean latency of the requests
	// counted slow.
	Latency time.Duration
	// FlowSchema and PriorityLevel are the UIDs of the API priority and
	// fairness configuration that classified the request, when the
	// server sent them (X-Kubernetes-PF-FlowSchema-UID and
	// X-Kubernetes-PF-PriorityLevel-UID).
	FlowSchema, PriorityLevel string
	// Rate is the budget's rate after the pushback.
	Rate float64
	// Concurrency is the limit on requests in flight after the pushback;
	// +Inf for none.
	Concurrency float64
}

// concurrencyLimited reports whether p is priority and fairness's
// rejection: a 429 that names the priority level that rejected it. Such a
// level limits requests in flight, not a rate.
func (p Pushback) concurrencyLimited() bool {
	return p.Status == 429 && p.PriorityLevel != ""
}

// Budget is one operator's API budget: a token bucket whose rate adapts
// to the server (AIMD), whose waiting requests are served by lane in
// priority order with reserves, and within the reconcile lane by
// controller weight. Its methods are safe for concurrent use.
type Budget struct {
	clock      clock.WithDelayedExecution
	m          atomic.Pointer[Metrics] // nil until registered
	names      MetricNames
	onPushback func(Pushback)

	win *window // requests in flight, narrowed by priority and fairness's 429s
	// limited is whether a rate applies: !s.unlimited() as of the last
	// call that may have changed it, for Limited to read without the lock.
	limited atomic.Bool

	mu     sync.Mutex
	s      *sched
	lat    latency
	timer  clock.Timer // armed while requests wait; nil otherwise
	closed bool
}

// New returns a Budget, its metrics registered with opts.Registerer.
func New(opts Options) (*Budget, error) {
	c := opts.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	burst := opts.Burst
	if burst <= 0 {
		burst = max(int(math.Ceil(2*opts.QPS)), 1)
	}
	b := &Budget{clock: c, onPushback: opts.OnPushback, s: newSched(opts.QPS, burst, c.Now()), win: newWindow()}
	b.s.weightOf = opts.Weights
	b.names = opts.MetricNames
	if b.names == (MetricNames{}) {
		b.names = ManagerMetricNames
	}
	b.noteRate()
	if opts.Registerer != nil {
		if err := b.RegisterMetrics(opts.Registerer); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// metrics returns b's metrics; nil, which records nothing, until they
// are registered.
func (b *Budget) metrics() *Metrics { return b.m.Load() }

// RegisterMetrics registers b's metrics with reg, named as
// Options.MetricNames says, for a Budget made without
// Options.Registerer: a member cluster's budget registers its metrics
// once the fleet has released those of the member it replaces. It fails
// if they are registered already; a closed Budget registers nothing.
func (b *Budget) RegisterMetrics(reg prometheus.Registerer) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	if b.m.Load() != nil {
		return errors.New("register the API budget's metrics: registered already")
	}
	m, err := newMetrics(reg, b.names, b)
	if err != nil {
		return fmt.Errorf("register the API budget's metrics: %w", err)
	}
	b.m.Store(m)
	return nil
}

// Concurrency returns the limit on requests in flight in force now; +Inf
// while none applies.
func (b *Budget) Concurrency() float64 { return b.win.Limit() }

// configured returns the configured rate; +Inf for none.
func (b *Budget) configured() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.s.configured
}

// Rate returns the rate in force now, in requests a second; +Inf when no
// fixed rate applies and the server has not pushed back.
func (b *Budget) Rate() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s.refill(b.clock.Now())
	b.noteRate()
	return b.s.rate
}

// Limited reports, without a lock, whether requests may wait: while a
// rate applies (as of the budget's last request), or while priority and
// fairness's 429s have narrowed the window of requests in flight. False
// while no fixed rate applies and the server has not pushed back, when
// no request waits.
func (b *Budget) Limited() bool { return b.limited.Load() || b.win.Narrowed() }

// noteRate records for Limited whether a rate applies. b.mu is held.
func (b *Budget) noteRate() { b.limited.Store(!b.s.unlimited()) }

// SetWeight sets the weight of controller's flow in the reconcile lane:
// while the lane is contended, controllers get tokens in proportion to
// their weights. Unset, or <= 0, is 1.
func (b *Budget) SetWeight(controller string, weight float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s.setWeight(controller, weight)
	b.metrics().start(LaneReconcile, controller)
}

// Weight returns the weight of controller's flow in the reconcile lane:
// SetWeight's, or 1. A member cluster's budget takes it (Options.Weights).
func (b *Budget) Weight(controller string) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.s.weights[controller]; w > 0 {
		return w
	}
	return 1
}

// Close ends the requests waiting for b with an error wrapping ErrClosed,
// refuses later ones the same way, stops its timer and unregisters its
// metrics: a member cluster's budget is closed when the member is
// disengaged. Closing twice does nothing more.
func (b *Budget) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	for _, w := range b.s.closeAll() {
		w.closed = true
		close(w.ready)
	}
	b.noteRate()
	b.mu.Unlock()
	b.metrics().unregister()
	b.m.Store(nil)
}

// Forget drops controller's weight and flow (a controller removed).
func (b *Budget) Forget(controller string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s.forget(controller)
	b.metrics().forget(controller)
}

// Wait blocks until a request of lane (and, in the reconcile lane, of
// controller) may be sent, and returns nil; or until ctx ends, and
// returns an error wrapping its cause, having taken nothing. A request of
// LaneLease or LaneHealth never waits.
func (b *Budget) Wait(ctx context.Context, lane Lane, controller string) error {
	if lane == LaneReconcile && controller == "" {
		controller = Unattributed
	}
	if lane != LaneReconcile {
		controller = ""
	}
	waited, err := b.wait(ctx, lane, controller)
	if err != nil {
		return err
	}
	b.metrics().granted(lane, controller, waited)
	return nil
}

// wait is Wait, lane and controller as Wait makes them, counting a wait
// canceled but not the token granted: it returns how long it waited, 0 if
// not at all.
func (b *Budget) wait(ctx context.Context, lane Lane, controller string) (time.Duration, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return 0, fmt.Errorf("wait for the API budget (lane %s): %w", lane, ErrClosed)
	}
	now := b.clock.Now()
	if lane.urgent() {
		b.s.charge(now)
		b.noteRate()
		b.mu.Unlock()
		return 0, nil
	}
	if b.s.take(now) || (lane == LaneReconcile && b.s.borrow(now, controller)) {
		b.noteRate()
		b.mu.Unlock()
		return 0, nil
	}
	b.noteRate()
	if ctx.Err() != nil {
		b.mu.Unlock()
		return 0, fmt.Errorf("wait for the API budget (lane %s): %w", lane, context.Cause(ctx))
	}
	w := &waiter{lane: lane, ready: make(chan struct{})}
	b.s.enqueue(w, controller)
	b.arm()
	b.mu.Unlock()
	select {
	case <-w.ready:
		if w.closed {
			return 0, fmt.Errorf("wait for the API budget (lane %s): %w", lane, ErrClosed)
		}
		return b.clock.Since(now), nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	if w.closed {
		// Closed as ctx ended: nothing was taken, nothing waits.
	} else if w.granted {
		// Granted as ctx ended: the token goes back.
		b.s.giveBack()
		b.dispatch()
	} else {
		b.s.cancel(w)
	}
	b.mu.Unlock()
	b.metrics().canceled(lane, controller, b.clock.Since(now))
	return 0, fmt.Errorf("wait for the API budget (lane %s): %w", lane, context.Cause(ctx))
}

// giveBack returns a token granted and not spent, and serves the waiters
// it may let go.
func (b *Budget) giveBack() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s.giveBack()
	b.dispatch()
}

// arm starts the timer for the next token, unless it runs. b.mu is held.
func (b *Budget) arm() {
	if b.timer != nil || b.closed || b.s.waiting() == 0 {
		return
	}
	// tick runs in a goroutine of its own: a fake clock calls AfterFunc's
	// function holding its lock, which tick's reading of it would take.
	b.timer = b.clock.AfterFunc(max(b.s.until(), time.Millisecond), func() { go b.tick() })
}

func (b *Budget) tick() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.timer = nil
	b.dispatch()
}

// dispatch grants what the bucket holds and arms the timer for the rest.
// b.mu is held.
func (b *Budget) dispatch() {
	for _, w := range b.s.dispatch(b.clock.Now()) {
		close(w.ready)
	}
	b.noteRate()
	b.arm()
}

// PushedBack records that the server refused a request with 429, or asked
// for a Retry-After (p.Reason says which): the rate falls multiplicatively
// (at most once a second), then recovers additively.
//
// A 429 of the API server's priority and fairness (one that names the
// priority level) narrows the window of requests in flight instead, and
// leaves the rate alone: the level limits how many requests it serves at
// once, so fewer at once, not fewer a second, is what stops its 429s.
func (b *Budget) PushedBack(p Pushback) { b.pushedBack(math.MaxInt, p) }

// pushedBack is PushedBack for a request the window let in at epoch.
func (b *Budget) pushedBack(epoch int, p Pushback) {
	var changed bool
	if p.concurrencyLimited() {
		changed = b.win.pushedBack(b.clock.Now(), epoch)
	}
	b.mu.Lock()
	if !p.concurrencyLimited() {
		now := b.clock.Now()
		if changed = b.s.pushedBack(now); changed {
			b.lat.reset(now)
		}
	}
	p.Rate = b.s.rate
	b.noteRate()
	b.mu.Unlock()
	p.Concurrency = b.win.Limit()
	b.metrics().pushedBack(p.Lane, p.Controller, p.Reason)
	if changed && b.onPushback != nil {
		b.onPushback(p)
	}
}
