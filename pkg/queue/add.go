package queue

import (
	"math"
	"time"
)

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
// Change times mostly come in order, so a key added again mostly has an
// earlier one already: a time no earlier than any changed holds skips the
// lookup.
func (q *Queue[K]) noteChanged(n *node[K], changed int64) {
	if !n.timed {
		q.changed.set(n, changed)
		n.timed = true
		q.latestChanged = max(q.latestChanged, changed)
		return
	}
	if changed >= q.latestChanged {
		return
	}
	if held, _ := q.changed.get(n); changed < held {
		q.changed.set(n, changed)
	}
}

// takeChanged returns and forgets n's change time, 0 if it has none.
func (q *Queue[K]) takeChanged(n *node[K]) int64 {
	if !n.timed {
		return 0
	}
	n.timed = false
	return q.changed.take(n)
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
