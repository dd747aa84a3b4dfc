package queue

import (
	"sync"
	"time"
)

// spareGets is the state GetSpare needs. The queue counts the keys in flight
// per tenant only once GetSpare has been called, so that a queue whose
// workers only call Get pays nothing for it.
type spareGets[K comparable] struct {
	// inFlight counts the keys handed out and not yet Done, by tenant; a
	// tenant with none is not in it. It is nil until the first GetSpare,
	// then counts every node in Queue.processing.
	inFlight map[string]int32
	cond     sync.Cond // broadcast when a key GetSpare may take could be ready
	parked   int       // GetSpare calls waiting on cond
	// wake is set, under the lock, when a key of a tenant with nothing in
	// flight becomes ready, or a tenant's last key in flight is done, while
	// a GetSpare is parked: unlock then broadcasts cond.
	wake     bool
	agedTurn bool // as Queue.agedTurn, for GetSpare's own turns
	// regular counts the keys Get handed out that are not yet Done, once
	// counting is on; workers is the threshold the last GetSpare was given:
	// GetSpare hands out nothing while regular is below it.
	regular int
	workers int
}

// GetSpare is Get for a spare worker: it hands out only a key whose tenant
// (see Options.Tenant) has no key in flight, that is, handed out by Get or
// GetSpare and not yet passed to Done, and only while at least workers keys
// handed out by Get are in flight. It blocks until there is such a key or
// the queue shuts down. So however big one tenant's backlog, and however
// many of its keys are in flight, a worker that calls only GetSpare never
// takes that tenant's keys, and is free for a tenant that has nothing in
// flight; package controller's spare workers are such workers.
//
// workers is how many workers call Get: a spare then serves only while all
// of them are busy, so a spare never runs beside an idle worker, and the
// keys of one tenant, if nothing else is in flight, are handed out exactly
// as Get alone would hand them out. 0 waives the condition.
//
// Otherwise it honours Get's contract: among the keys it may take, the
// highest priority first, round-robin across tenants within a priority (a
// tenant served out of its turn goes to the back of the round, as if it had
// had its turn), and on every other GetSpare the oldest ready key once it
// has been ready for Options.MaxWait, if its tenant has nothing in flight.
// Keys it hands out are in flight like Get's: Done must follow, they are
// exclusive, and ShutDownWithDrain waits for them. After ShutDown it
// returns shutdown true at once. Without Options.Tenant every key has the
// same tenant, so GetSpare hands out a key only while no key is in flight.
//
// The first GetSpare turns on counting keys in flight per tenant, which
// from then on costs Get and Done a map update each, and GetSpare a look
// at each tenant with ready keys ahead of the one it serves: at most one
// per key in flight.
func (q *Queue[K]) GetSpare(workers int) (key K, priority int, shutdown bool) {
	n, early := q.nextSpare(workers)
	if n == nil {
		return key, 0, true
	}
	key, priority, _ = q.handOut(n, early)
	return key, priority, false
}

// GetSpareChanged is GetSpare that also hands out the key's change time,
// as GetChanged does.
func (q *Queue[K]) GetSpareChanged(workers int) (key K, priority int, changed time.Time, shutdown bool) {
	n, early := q.nextSpare(workers)
	return q.handOutChanged(n, early)
}

// nextSpare is next for GetSpare.
func (q *Queue[K]) nextSpare(workers int) (n *node[K], early int64) {
	early = noReading
	if q.metrics.on {
		early = q.now()
	}
	q.mu.Lock()
	q.spareGets(workers)
	for !q.shuttingDown {
		if q.spares.regular >= workers {
			if n = q.pickSpare(); n != nil {
				break
			}
		}
		q.spares.parked++
		q.spares.cond.Wait()
		q.spares.parked--
		early = noReading
	}
	if q.shuttingDown {
		q.mu.Unlock()
		return nil, early
	}
	q.ready.removeOutOfTurn(n)
	n.spare = true
	return n, early
}

// spareGets readies the count GetSpare needs, and records its workers.
func (q *Queue[K]) spareGets(workers int) {
	if q.spares.inFlight == nil {
		q.countInFlight()
	}
	q.spares.workers = workers
}

// countInFlight starts counting the keys in flight per tenant.
func (q *Queue[K]) countInFlight() {
	q.spares.inFlight = map[string]int32{}
	for _, n := range q.processing {
		q.spares.inFlight[n.tenantQueue.name]++
	}
	q.spares.regular = len(q.processing) // no GetSpare has handed out a key
}

// handedOut counts n, just handed out, among the keys in flight. It reports
// whether parked GetSpare calls must be woken: n came from Get and makes
// every worker busy.
func (q *Queue[K]) handedOut(n *node[K]) (wake bool) {
	q.spares.inFlight[n.tenantQueue.name]++
	if n.spare {
		return false
	}
	q.spares.regular++
	return q.spares.parked > 0 && q.spares.regular == q.spares.workers
}

// inFlight returns how many keys of n's tenant are in flight. GetSpare must
// have been called.
func (q *Queue[K]) inFlight(n *node[K]) int32 {
	return q.spares.inFlight[n.tenantQueue.name]
}

// tenantDone counts n, no longer in flight, out of the keys in flight. When
// it was its tenant's last, a parked GetSpare may now take the tenant's
// ready keys.
func (q *Queue[K]) tenantDone(n *node[K]) {
	if n.spare {
		n.spare = false
	} else {
		q.spares.regular--
	}
	tenant := n.tenantQueue.name
	c := q.spares.inFlight[tenant] - 1
	if c > 0 {
		q.spares.inFlight[tenant] = c
		return
	}
	delete(q.spares.inFlight, tenant)
	if q.spares.parked > 0 {
		q.spares.wake = true
	}
}

// pickSpare chooses the node GetSpare hands out, or nil if no ready key's
// tenant is free of keys in flight. It ages as pick does, with its own
// turns.
func (q *Queue[K]) pickSpare() *node[K] {
	n := q.nextFree()
	if n == nil || !q.ready.aging {
		return n
	}
	oldest := q.ready.oldest()
	if n == oldest {
		return n
	}
	if q.spares.agedTurn && q.inFlight(oldest) == 0 {
		if q.stampNow()-oldest.at >= int64(q.opts.MaxWait+q.tick) {
			q.spares.agedTurn = false
			return oldest
		}
	}
	q.spares.agedTurn = true
	return n
}

// nextFree returns what next would, skipping the tenants with keys in
// flight: the head of the first such tenant in the round of the highest
// bucket that has one. It looks at no more busy tenants than there are keys
// in flight per bucket.
func (q *Queue[K]) nextFree() *node[K] {
	if q.ready.n == 0 {
		return nil
	}
	for _, b := range q.ready.buckets {
		if b.n == 0 {
			continue
		}
		var free *node[K]
		for t := range b.tenantsInTurn {
			if q.spares.inFlight[t.name] == 0 {
				free = t.line.front()
				break
			}
		}
		if free != nil {
			return free
		}
	}
	return nil
}
