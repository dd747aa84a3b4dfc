package queue

import (
	"math"
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
	// changed if and only if its timed is set. A map beside the nodes
	// rather than a field in them: a field would take a node for a
	// reconcile.Request past one cache line (see node), and it is touched
	// only by queues whose adds say when their changes happened.
	changed map[*node[K]]int64

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

// Add queues key now at NormalPriority.
func (q *Queue[K]) Add(key K) {
	q.add(key, NormalPriority, 0, false, 0)
}

// AddAfter queues key at NormalPriority once d has passed. Of two delayed
// adds of one key, the earlier wins.
func (q *Queue[K]) AddAfter(key K, d time.Duration) {
	q.add(key, NormalPriority, d, true, 0)
}

// AddRateLimited queues key at NormalPriority after the rate limiter's delay
// for it.
func (q *Queue[K]) AddRateLimited(key K) {
	q.add(key, NormalPriority, q.opts.RateLimiter.When(key), true, 0)
}

// AddWithOpts queues keys as opts say.
func (q *Queue[K]) AddWithOpts(opts AddOpts, keys ...K) {
	changed := unixNano(opts.Changed)
	for _, key := range keys {
		d := opts.After
		if opts.RateLimited {
			d = max(d, q.opts.RateLimiter.When(key))
		}
		q.add(key, opts.Priority, d, opts.RateLimited || opts.After != 0, changed)
	}
}

// Unix nanoseconds hold the times from 1678 to 2262.
var minNano, maxNano = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)

// unixNano returns t as Unix nanoseconds, or 0 (unknown) for the zero time
// and for a time they cannot hold, which UnixNano would wrap around into
// another date: a change time comes from the objects' managedFields,
// which a client may write.
func unixNano(t time.Time) int64 {
	if t.IsZero() || t.Before(minNano) || t.After(maxNano) {
		return 0
	}
	return t.UnixNano()
}

// add adds key; retry says whether the add counts in workqueue_retries_total,
// as every AddAfter and AddRateLimited does in client-go, whatever the delay.
// changed is AddOpts.Changed in Unix nanoseconds, 0 if unknown.
func (q *Queue[K]) add(key K, priority int, after time.Duration, retry bool, changed int64) {
	early := noReading
	if after > 0 || q.metrics.on {
		early = q.now()
	}
	q.mu.Lock()
	retry = retry && !q.shuttingDown
	counted := q.addLocked(key, priority, after, early, changed)
	q.unlock()
	// Metrics are updated outside the lock: their atomics contend across
	// cores, and the lock should be held for the queue's own work only.
	if q.metrics.on {
		if retry {
			q.metrics.retries.Inc()
		}
		if counted {
			q.metrics.adds.Inc()
		}
	}
}

// addLocked does the work of add and reports whether the add counts in
// workqueue_adds_total: whether it made the key due now, so that it joins
// workqueue_depth (see Options.Metrics). early is a reading of the clock
// taken before the lock if the add needs one (see readClock), else
// noReading. changed is as for add.
func (q *Queue[K]) addLocked(key K, priority int, after time.Duration, early, changed int64) (counted bool) {
	if q.shuttingDown {
		return false
	}
	n := q.items[key]
	if n == nil {
		return q.addNew(key, priority, after, early, changed)
	}
	if changed != 0 {
		q.noteChanged(n, changed)
	}
	switch n.state {
	case stateReady:
		// Ready beats any delay; only the priority can go up.
		if priority > n.priority() {
			q.ready.raise(n, priority)
		}
	case stateWaiting:
		if priority > n.priority() {
			q.ready.setPriority(n, priority)
		}
		if after <= 0 {
			q.waiting.remove(n)
			q.makeReady(n, q.readyTime(0, early))
			return true
		}
		if at := q.readClock(early) + int64(after); at < n.at {
			n.at = at
			q.waiting.fix(n)
			q.wakeDelayLoop(n)
		}
	case stateProcessing:
		return q.reAdd(n, priority, after, early)
	}
	return false
}

// reAdd marks n, which is being processed, to be queued again at Done, with
// the highest priority and earliest time it is added with meanwhile. It
// reports whether the add made the key due now: workqueue_depth then counts
// it, as client-go's and controller-runtime's do, though Len does not.
func (q *Queue[K]) reAdd(n *node[K], priority int, after time.Duration, early int64) (counted bool) {
	at := q.readyTime(after, early)
	if n.dirty == clean {
		n.dirty = dirtyLater
		n.setDirtyAt(at)
		if priority != n.priority() {
			// The re-add's priority replaces the one it was handed out at.
			q.ready.setPriority(n, priority)
		}
	} else {
		if priority > n.priority() {
			q.raiseDirty(n, priority)
		}
		if at < n.dirtyAt() {
			n.setDirtyAt(at)
		}
	}
	if after > 0 || n.dirty == dirtyNow {
		return false
	}
	n.dirty = dirtyNow
	n.countDepth(1)
	return true
}

// raiseDirty gives n, which is being processed and dirty, a higher priority,
// moving it between depth gauges if it is counted in one.
func (q *Queue[K]) raiseDirty(n *node[K], priority int) {
	if n.dirty == dirtyNow {
		n.countDepth(-1)
	}
	q.ready.setPriority(n, priority)
	if n.dirty == dirtyNow {
		n.countDepth(1)
	}
}

// addNew adds a key the queue does not hold and reports whether it is ready
// now.
func (q *Queue[K]) addNew(key K, priority int, after time.Duration, early, changed int64) bool {
	n := q.newNode(key)
	if changed != 0 {
		q.noteChanged(n, changed)
	}
	var tenant string
	if q.opts.Tenant != nil {
		tenant = q.opts.Tenant(key)
	}
	n.tenantQueue = q.ready.line(priority, tenant)
	q.items[key] = n
	if after > 0 {
		n.at = q.readClock(early) + int64(after)
		q.wait(n)
		return false
	}
	q.makeReady(n, q.readyTime(0, early))
	return true
}

// noteChanged keeps changed as n's change time unless n has an earlier one.
func (q *Queue[K]) noteChanged(n *node[K], changed int64) {
	if !n.timed {
		if q.changed == nil {
			q.changed = map[*node[K]]int64{}
		}
		q.changed[n], n.timed = changed, true
		return
	}
	if changed < q.changed[n] {
		q.changed[n] = changed
	}
}

// takeChanged returns and forgets n's change time, 0 if it has none.
func (q *Queue[K]) takeChanged(n *node[K]) int64 {
	if !n.timed {
		return 0
	}
	changed := q.changed[n]
	delete(q.changed, n)
	n.timed = false
	return changed
}

// wait puts n, whose at is set, in the waiting heap, behind every node due
// at the same instant.
func (q *Queue[K]) wait(n *node[K]) {
	q.waiting.push(n, q.waited)
	q.waited++
	q.wakeDelayLoop(n)
}

// readyTime is when an add with the given delay makes a key ready. Delays
// and metrics read the clock; aging makes do with the stamp; without either
// nothing reads the time. early is as for readClock.
func (q *Queue[K]) readyTime(after time.Duration, early int64) int64 {
	switch {
	case after > 0 || q.metrics.on:
		return q.readClock(early) + int64(max(after, 0))
	case q.tick == 0:
		return 0 // the queue's start: never later than now
	default:
		return q.stampNow()
	}
}

// noReading stands for no early reading of the clock: see readClock.
const noReading int64 = -1

// readClock returns a reading of the clock and refreshes the stamp with it.
// The reading is early, if the operation took one before the lock, or one
// taken now. Adds with a delay and, with metrics on, every operation read the
// clock, an eighth of the time of MetricsContended in profiles; reading it
// before the lock keeps that out of the time the lock is held. An early
// reading may be older than the stamp, by at most the wait for the lock, and
// the stamp is returned then: readings never go back, so the age ring stays
// in the order of its nodes' times. A key's time may thus precede the
// operation by the wait for the lock, which is far less than the tick by
// which aging errs late.
func (q *Queue[K]) readClock(early int64) int64 {
	now := early
	if now == noReading {
		now = q.now()
	}
	now = max(now, q.stamp)
	q.stamp = now
	return now
}

// stampNow returns the stamp, at most one tick old. If the delay loop is not
// refreshing it, it reads the clock and sets the loop ticking.
func (q *Queue[K]) stampNow() int64 {
	if !q.ticking {
		q.readClock(noReading)
		q.ticking = true
		q.nudgeDelayLoop()
	}
	return q.stamp
}

// now reads the queue's clock as nanoseconds since New. With the system
// clock that is one monotonic clock read (time.Since), about half the cost
// of time.Now, which also reads the wall clock.
func (q *Queue[K]) now() int64 {
	if q.systemClock {
		return int64(time.Since(q.start))
	}
	return int64(q.clock.Now().Sub(q.start))
}

// isSystemClock reports whether c is k8s.io/utils/clock's RealClock, which
// now may read by time.Since.
func isSystemClock(c clock.Clock) bool {
	switch c.(type) {
	case clock.RealClock, *clock.RealClock:
		return true
	}
	return false
}

// makeReady puts n in the ready set. The caller, holding the lock, must
// release it with unlock, which wakes a Get for n.
func (q *Queue[K]) makeReady(n *node[K], at int64) {
	n.state, n.at = stateReady, at
	q.ready.push(n)
	q.readied++
	if q.spares.parked > 0 && q.inFlight(n) == 0 {
		q.spares.wake = true
	}
}

// unlock releases the lock, then wakes one parked Get for each key made
// ready while it was held. Waking after the release lets the woken Get take
// the lock at once rather than wake only to wait for it, and keeps the cost
// of the wake-up, which may start a thread, out of the time the lock is
// held. No wake-up is lost: a Get parks only after it has seen, under the
// lock, that no key is ready, and Wait enrols it before releasing the lock.
//
// With nothing to wake it writes nothing but the lock, so that an add that
// changes nothing (of a key already queued) leaves every cache line but the
// lock's shared between cores: unconditional stores to readied and
// spares.wake, which lie on lines of their own, made concurrent adds pass
// those lines from core to core too.
func (q *Queue[K]) unlock() {
	n, wakeSpares := q.readied, q.spares.wake
	if n == 0 && !wakeSpares {
		q.mu.Unlock()
		return
	}
	q.readied, q.spares.wake = 0, false
	q.mu.Unlock()
	for range n {
		q.cond.Signal()
	}
	if wakeSpares {
		q.spares.cond.Broadcast()
	}
}

// Get blocks until a key is ready or the queue shuts down, and hands the key
// out with its priority. The caller must call Done with the key when it has
// finished with it; until then no other Get returns that key. After ShutDown,
// Get returns shutdown true at once and hands out nothing more, not even keys
// still queued (client-go's hands those out first: see the package doc),
// so that a controller stops promptly; its sources queue everything again
// after a restart.
func (q *Queue[K]) Get() (key K, priority int, shutdown bool) {
	n, early := q.next()
	if n == nil {
		return key, 0, true
	}
	key, priority, _ = q.handOut(n, early)
	return key, priority, false
}

// GetChanged is Get that also hands out the earliest AddOpts.Changed of
// the key's adds since it was last handed out, or the zero time if none
// said when its change happened (a retry, a timer). Get forgets it.
func (q *Queue[K]) GetChanged() (key K, priority int, changed time.Time, shutdown bool) {
	n, early := q.next()
	return q.handOutChanged(n, early)
}

// handOutChanged is handOut for GetChanged and GetSpareChanged: n is nil
// once the queue has shut down.
func (q *Queue[K]) handOutChanged(n *node[K], early int64) (key K, priority int, changed time.Time, shutdown bool) {
	if n == nil {
		return key, 0, changed, true
	}
	key, priority, ns := q.handOut(n, early)
	if ns != 0 {
		changed = time.Unix(0, ns)
	}
	return key, priority, changed, false
}

// next waits for a ready node and takes it out of the ready set, holding
// the lock, which handOut releases; or, once the queue shuts down,
// releases the lock and returns nil. early is as for readClock.
func (q *Queue[K]) next() (n *node[K], early int64) {
	early = noReading
	if q.metrics.on {
		early = q.now()
	}
	q.mu.Lock()
	for q.ready.n == 0 && !q.shuttingDown {
		q.cond.Wait()
		early = noReading // too old to tell when the key was handed out
	}
	if q.shuttingDown {
		q.mu.Unlock()
		return nil, early
	}
	n = q.pick()
	q.ready.remove(n)
	return n, early
}

// handOut moves n, just taken out of the ready set, to the processing
// slice, releases the lock and returns n's key, priority and change time
// (Unix nanoseconds, 0 if none) as GetChanged does.
func (q *Queue[K]) handOut(n *node[K], early int64) (key K, priority int, changed int64) {
	n.state = stateProcessing
	changed = q.takeChanged(n)
	wakeSpares := q.linkProcessing(n)
	var waited time.Duration
	if q.metrics.on {
		start := q.readClock(early)
		waited = time.Duration(start - n.at)
		n.at = start
	}
	key, priority = n.key, n.priority()
	q.mu.Unlock()
	if wakeSpares {
		q.spares.cond.Broadcast()
	}
	if q.metrics.on {
		q.metrics.latency.Observe(waited.Seconds())
	}
	return key, priority, changed
}

// pick chooses the node Get hands out: by priority and fairness, except that
// every other Get serves the oldest node once it has been ready for MaxWait.
func (q *Queue[K]) pick() *node[K] {
	n := q.ready.next()
	if !q.ready.aging {
		return n
	}
	oldest := q.ready.oldest()
	if n == oldest {
		return n
	}
	if q.agedTurn {
		// The stamp is up to a tick behind the clock, and so may oldest.at
		// be: waiting for MaxWait and a tick by the stamp means waiting for
		// at least MaxWait by the clock.
		if q.stampNow()-oldest.at >= int64(q.opts.MaxWait+q.tick) {
			q.agedTurn = false
			return oldest
		}
	}
	q.agedTurn = true
	return n
}

// Done marks key as finished. If it was added again while being processed,
// it is queued again now (or, for a delayed add, when its delay ends). Done
// for a key that is not being processed does nothing.
func (q *Queue[K]) Done(key K) {
	early := noReading
	if q.metrics.on {
		early = q.now()
	}
	q.mu.Lock()
	worked, ok, added := q.doneLocked(key, early)
	q.unlock()
	if ok && q.metrics.on {
		q.metrics.workDuration.Observe(worked.Seconds())
		if added {
			q.metrics.adds.Inc()
		}
	}
}

// doneLocked does the work of Done and reports how long the key was being
// processed (with metrics on), or false if it was not being processed, and
// whether it made the key due, which counts in workqueue_adds_total.
func (q *Queue[K]) doneLocked(key K, early int64) (worked time.Duration, ok, added bool) {
	n := q.items[key]
	if n == nil || n.state != stateProcessing {
		return 0, false, false
	}
	q.unlinkProcessing(n)
	if q.metrics.on {
		worked = time.Duration(q.readClock(early) - n.at)
	}
	if len(q.processing) == 0 && q.drained != nil {
		close(q.drained)
		q.drained = nil
	}
	dirty := n.dirty
	if dirty == clean {
		delete(q.items, key)
		q.freeNode(n)
		return worked, true, false
	}
	n.dirty = clean // its line has the priority to queue it with
	now := q.readyTime(0, early)
	switch {
	case dirty == dirtyNow:
		// Counted in depth and adds already; the ready set counts it now.
		n.countDepth(-1)
	case n.dirtyAt() > now:
		n.state, n.at = stateWaiting, n.dirtyAt()
		q.wait(n)
		return worked, true, false
	}
	q.makeReady(n, now)
	return worked, true, dirty == dirtyLater
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

// linkProcessing adds n to the processing slice. It reports whether parked
// GetSpare calls must be woken, which the caller does after the unlock.
func (q *Queue[K]) linkProcessing(n *node[K]) (wakeSpares bool) {
	n.index = int32(len(q.processing))
	q.processing = append(q.processing, n)
	return q.spares.inFlight != nil && q.handedOut(n)
}

// unlinkProcessing takes n out of the processing slice, moving the last node
// into its place: the nodes in flight were handed out recently, so are in
// cache.
func (q *Queue[K]) unlinkProcessing(n *node[K]) {
	last := len(q.processing) - 1
	moved := q.processing[last]
	q.processing[n.index], moved.index = moved, n.index
	q.processing[last] = nil
	q.processing = q.processing[:last]
	n.index = -1
	if q.spares.inFlight != nil {
		q.tenantDone(n)
	}
}

// newNode returns a node for key, recycled if one is free.
func (q *Queue[K]) newNode(key K) *node[K] {
	n := q.free.pop()
	n.key = key
	return n
}

// freeNode clears n, whose key the queue no longer holds, for reuse.
func (q *Queue[K]) freeNode(n *node[K]) {
	q.takeChanged(n)
	*n = node[K]{}
	q.free.push(n)
}
