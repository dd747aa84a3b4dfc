package queue

import (
	"context"
	"time"

	"github.com/opkit-dev/opkit/internal/queueaccess"
)

// Internal returns q's side for opkit's own packages (see package
// queueaccess): Gets that take a key only while the caller holds a permit,
// for package controller's workers to wait for the API budget with no key
// in hand. Only opkit's packages can name its second argument.
func Internal[K comparable](q *Queue[K], _ queueaccess.Key) queueaccess.Queue[K] {
	return internals[K]{q}
}

type internals[K comparable] struct{ q *Queue[K] }

var _ queueaccess.Queue[string] = internals[string]{}

func (i internals[K]) GetChanged(ctx context.Context, p queueaccess.Permit) (key K, priority int, changed time.Time, shutdown bool) {
	return i.q.handOutChanged(i.q.nextPermitted(ctx, p, regularGet), noReading)
}

func (i internals[K]) GetSpareChanged(ctx context.Context, workers int, p queueaccess.Permit) (key K, priority int, changed time.Time, shutdown bool) {
	return i.q.handOutChanged(i.q.nextPermitted(ctx, p, max(workers, 0)), noReading)
}

// regularGet, as nextPermitted's workers, stands for a Get's worker, not a
// spare's.
const regularGet = -1

// nextPermitted is next, or nextSpare(workers) for workers >= 0, for a
// caller that must hold p to take a node (queueaccess.Queue): once a node
// is ready for it, it acquires p with the lock released, then takes the
// node first at that moment, holding the lock, which handOut releases. It
// returns nil, the lock released and p not held, once the queue shuts down
// or p's wait ends with ctx.
//
// A regular Get goes to acquire p only while more nodes are ready than
// regular Gets acquire permits for them (q.permitting), so that a worker
// waits for a permit only for a key no other worker waits to take, and
// the permits a budget grants go to keys, not to workers racing for one.
func (q *Queue[K]) nextPermitted(ctx context.Context, p queueaccess.Permit, workers int) *node[K] {
	q.mu.Lock()
	if workers != regularGet {
		q.spareGets(workers)
	}
	held := false
	for !q.shuttingDown {
		ready := q.readyFor(workers, held)
		switch {
		case ready && held:
			if workers == regularGet {
				q.permitting--
			}
			return q.takeReady(workers)
		case ready:
			if workers == regularGet {
				q.permitting++
			}
			q.mu.Unlock()
			err := p.Acquire(ctx)
			q.mu.Lock()
			if err != nil {
				q.unpermit(workers)
				q.mu.Unlock()
				return nil
			}
			held = true
		case held:
			// Another worker took the node meanwhile: the permit goes back,
			// rather than be held by a worker with nothing to do.
			q.unpermit(workers)
			q.mu.Unlock()
			p.Release()
			held = false
			q.mu.Lock()
		default:
			q.park(workers)
		}
	}
	if held {
		q.unpermit(workers)
	}
	q.mu.Unlock()
	if held {
		p.Release()
	}
	return nil
}

// readyFor reports whether a node is ready for a caller of nextPermitted:
// for a regular Get that holds its permit, any ready node; for one that
// does not, a ready node beyond those other Gets acquire permits for; for
// a spare, a node GetSpare may take.
func (q *Queue[K]) readyFor(workers int, held bool) bool {
	switch {
	case workers != regularGet:
		return q.spares.regular >= workers && q.nextFree() != nil
	case held:
		return q.ready.n > 0
	default:
		return q.ready.n > q.permitting
	}
}

// takeReady takes out of the ready set the node next or nextSpare would,
// readyFor having said there is one.
func (q *Queue[K]) takeReady(workers int) *node[K] {
	if workers == regularGet {
		n := q.pick()
		q.ready.remove(n)
		return n
	}
	n := q.pickSpare()
	q.ready.removeOutOfTurn(n)
	n.spare = true
	return n
}

// unpermit counts a regular Get out of q.permitting without a node: a
// parked Get may then acquire a permit for a node it left to this one.
func (q *Queue[K]) unpermit(workers int) {
	if workers != regularGet {
		return
	}
	q.permitting--
	if q.ready.n > q.permitting {
		q.cond.Signal()
	}
}

// park waits, the lock held, for a node to become ready for a regular Get
// or a spare one.
func (q *Queue[K]) park(workers int) {
	if workers == regularGet {
		q.cond.Wait()
		return
	}
	q.spares.parked++
	q.spares.cond.Wait()
	q.spares.parked--
}
