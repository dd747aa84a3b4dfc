package queue

import "time"

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
