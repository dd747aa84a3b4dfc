package queue

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Priorities for common cases. Any int is a valid priority; higher is served
// first.
const (
	// NormalPriority is the priority of Add, and of AddWithOpts with a zero
	// AddOpts.Priority.
	NormalPriority = 0
	// LowPriority is for work nobody waits on, such as the events of an
	// informer's initial list or of a resync.
	LowPriority = -100
)

// defaultMaxWait is Options.MaxWait's default.
const defaultMaxWait = 10 * time.Second

// Options configure New. The zero value is valid.
type Options[K comparable] struct {
	// Name names the queue in its metrics. Defaults to "".
	Name string

	// RateLimiter decides the delay of AddRateLimited and of AddOpts with
	// RateLimited set. Defaults to per-item exponential backoff: 5ms for the
	// first retry of a key, doubling with each retry, at most 1000s; Forget
	// resets a key to 5ms.
	RateLimiter workqueue.TypedRateLimiter[K]

	// Tenant, when set, turns on fairness: ready keys of one priority are
	// handed out round-robin across tenants (one key per tenant per turn),
	// first in, first out within a tenant. A typical tenant is the namespace.
	// It is called once for each key the queue does not hold yet, under the
	// queue's lock, so it must be fast and must not call the queue. Defaults
	// to nil: first in, first out within a priority.
	Tenant func(K) string

	// TenantGroup, with Tenant, makes fairness two-level: ready keys of one
	// priority are handed out round-robin across groups of tenants (one key
	// per group per turn), and within a group round-robin across its
	// tenants. A group with a thousand busy tenants then gets one turn, as
	// a group with one does. A fleet's controller groups the namespaces of
	// a member cluster under the member. TenantGroup is called with a
	// tenant's name when the queue first files a key under that tenant, so
	// a tenant's group must not change. Ignored without Tenant. Defaults to
	// nil: one level, every tenant a turn.
	TenantGroup func(tenant string) string

	// MaxWait bounds starvation. Once the oldest ready key has been ready
	// for MaxWait, at least every other Get hands out the oldest such key,
	// whatever the priorities and tenants of the others. A key that has been
	// ready for MaxWait behind n older such keys is therefore handed out
	// within 2(n+1) Gets. Defaults to 10s; negative turns aging
	// off, so that priorities are strict.
	//
	// Ages are told by a clock reading the queue refreshes every MaxWait/32
	// while keys are ready, not by a reading per key, which would cost more
	// than the rest of an Add. A key is therefore aged no earlier than
	// MaxWait after it became ready and, unless the process is starved of
	// CPU, no later than MaxWait/16 after that.
	MaxWait time.Duration

	// Metrics, when set, makes the queue's metrics, under its Name. They
	// have the names and meanings of client-go's workqueue metrics, so
	// dashboards built for those work unchanged; package metrics lists
	// where the meanings differ, in its "Differences from client-go /
	// controller-runtime", and has a ready-made provider, which also splits
	// depth by priority (see PriorityDepthProvider). Defaults to none.
	//
	//   - depth: keys due: ready, or added again without a delay while
	//     being processed.
	//   - adds: times a key became due: added without a delay, added again
	//     while being processed, or its delay ended.
	//   - latency: seconds a key was ready before Get handed it out.
	//   - work duration: seconds from Get to Done.
	//   - unfinished work seconds, longest running processor: the seconds
	//     of work in flight, and the age of the oldest.
	//   - retries: AddAfter and AddRateLimited calls, and AddWithOpts keys
	//     with After or RateLimited set, whatever the delay.
	Metrics workqueue.MetricsProvider

	// Clock tells time and makes the timers of delayed adds. Defaults to the
	// system clock. A test may pass a k8s.io/utils/clock/testing FakeClock
	// and Step it past a delay, or run the queue inside a testing/synctest
	// bubble with the default clock.
	Clock clock.Clock
}

// AddOpts configure AddWithOpts.
type AddOpts struct {
	// After delays the add: the key becomes ready no earlier than After from
	// now. Zero or negative means now.
	After time.Duration
	// RateLimited delays the add by the rate limiter's delay for the key, or
	// by After if that is longer, so that After cannot undo the backoff
	// (controller-runtime takes the shorter: see the package doc).
	RateLimited bool
	// Priority of the key; higher is handed out first. A key queued at a
	// lower priority is raised to this one; one queued higher stays higher.
	Priority int
	// Changed is when the change behind the add happened, for measuring
	// how long changes wait: the queue keeps, per key, the earliest
	// Changed of the adds since the key was last handed out, and
	// GetChanged hands it out with the key. Zero means unknown, and adds
	// nothing. Kept as Unix nanoseconds, so without a monotonic reading;
	// a time they cannot hold (before 1678, after 2262) counts as unknown.
	Changed time.Time
}

// Queue is a de-duplicating, rate-limited, priority work queue with aging and
// optional fairness. See the package documentation for its contract. All
// methods are safe for concurrent use.
//
// It holds one lock and allocates nothing per key in steady state. It runs
// one goroutine for delays and, with metrics, one that updates the
// in-flight gauges; both end at ShutDown.
type Queue[K comparable] struct {
	mu   sync.Mutex
	cond sync.Cond // signalled when ready gains a node or shutdown starts
	// readied counts the nodes made ready since the lock was taken: unlock
	// signals cond once for each.
	readied int
	spares  spareGets[K] // GetSpare's state: see spare.go

	// items holds every key the queue knows: ready, waiting or processing.
	// A key is in items if and only if its node is in exactly one of ready,
	// waiting and processing.
	items      map[K]*node[K]
	ready      readySet[K]
	waiting    waitHeap[K]
	waited     uint64       // nodes pushed onto waiting so far: their order
	processing []*node[K]   // nodes handed out and not yet Done
	free       freeNodes[K] // recycled nodes: see freeNodes
	// changed holds, as Unix nanoseconds, the earliest AddOpts.Changed of
	// each key added with one since it was last handed out. A node is in
	// changed if and only if its timed is set. A table beside the nodes
	// rather than a field in them: a field would take a node for a
	// reconcile.Request past one cache line (see node), and it is touched
	// only by queues whose adds say when their changes happened.
	changed changeTimes[K]
	// latestChanged is no earlier than any time changed holds: the latest
	// it was given.
	latestChanged int64

	agedTurn bool // the next Get serves the oldest overdue node, if any
	// stamp is a recent reading of the clock, for aging. While ticking, the
	// delay loop refreshes it every tick, so it is at most one tick old.
	stamp        int64
	ticking      bool
	tick         time.Duration // MaxWait/32; zero with aging off
	shuttingDown bool
	drained      chan struct{} // closed when shut down and inFlight is 0

	opts        Options[K]
	metrics     queueMetrics
	clock       clock.Clock
	systemClock bool          // clock is the system clock: read it by time.Since
	start       time.Time     // the clock's reading at New
	nudge       chan struct{} // wakes the delay loop when the earliest wait changes
	stop        chan struct{} // closed by ShutDown; stops background goroutines
	// permitting counts the regular Gets of Internal's side that saw a
	// ready node and acquire, or hold, a permit to take one (see
	// nextPermitted).
	permitting int
}

// New returns a running queue. Its background goroutines end at ShutDown,
// which the caller must call.
func New[K comparable](opts Options[K]) *Queue[K] {
	if opts.RateLimiter == nil {
		opts.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[K](5*time.Millisecond, 1000*time.Second)
	}
	if opts.MaxWait == 0 {
		opts.MaxWait = defaultMaxWait
	}
	var tick time.Duration
	if opts.MaxWait > 0 {
		tick = max(opts.MaxWait/32, 1)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	q := &Queue[K]{
		items:       map[K]*node[K]{},
		opts:        opts,
		clock:       opts.Clock,
		start:       opts.Clock.Now(),
		systemClock: isSystemClock(opts.Clock),
		tick:        tick,
		nudge:       make(chan struct{}, 1),
		stop:        make(chan struct{}),
	}
	q.cond.L = &q.mu
	q.spares.cond.L = &q.mu
	q.ready.fair = opts.Tenant != nil
	if q.ready.fair {
		q.ready.groupOf = opts.TenantGroup
	}
	q.ready.aging = opts.MaxWait > 0
	q.ready.age.slot = ageSlot
	if opts.Metrics != nil {
		q.metrics = newQueueMetrics(opts.Name, opts.Metrics)
		q.ready.newDepth = newDepthMetric(opts.Name, opts.Metrics)
		go q.metricsLoop()
	}
	go q.delayLoop()
	return q
}

// Forget resets the rate limiter's backoff for key. It does not remove the
// key from the queue.
func (q *Queue[K]) Forget(key K) {
	q.opts.RateLimiter.Forget(key)
}

// NumRequeues returns how many times the rate limiter has delayed key since
// it was last forgotten.
func (q *Queue[K]) NumRequeues(key K) int {
	return q.opts.RateLimiter.NumRequeues(key)
}

// Len returns the number of keys ready to be handed out. Keys waiting for a
// delay and keys being processed are not counted.
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready.n
}
