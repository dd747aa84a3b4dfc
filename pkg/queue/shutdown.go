package queue

import (
	"context"
	"errors"
	"fmt"
)

// ErrDrainStopped is wrapped by the error of a ShutDownWithDrain that a
// ShutDown ended before the keys in flight were done.
var ErrDrainStopped = errors.New("drain stopped by ShutDown")

// ShutDown stops the queue: adds are ignored, blocked and later Gets return
// shutdown, and delayed keys stay where they are. Keys being processed may
// still be passed to Done. ShutDown may be called more than once; a call
// during ShutDownWithDrain ends the drain at once, as in client-go, so that
// a second stop signal is never ignored.
func (q *Queue[K]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutDownLocked()
	if q.drained != nil {
		close(q.drained)
		q.drained = nil
	}
}

func (q *Queue[K]) shutDownLocked() {
	if q.shuttingDown {
		return
	}
	q.shuttingDown = true
	close(q.stop)
	q.cond.Broadcast()
	q.spares.cond.Broadcast()
}

// ShuttingDown reports whether ShutDown has been called.
func (q *Queue[K]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shuttingDown
}

// ShutDownWithDrain shuts the queue down and waits until every key handed out
// has been passed to Done, until ctx ends, or until ShutDown is called. In
// the second case it returns an error that wraps the context's cause, in the
// third one that wraps ErrDrainStopped; both name what is still in flight.
func (q *Queue[K]) ShutDownWithDrain(ctx context.Context) error {
	q.mu.Lock()
	q.shutDownLocked()
	if len(q.processing) == 0 {
		q.mu.Unlock()
		return nil
	}
	if q.drained == nil {
		q.drained = make(chan struct{})
	}
	drained := q.drained
	q.mu.Unlock()

	select {
	case <-drained:
		// Closed by the last Done, or by ShutDown: after shutdown Get hands
		// out nothing, so keys still in flight mean the latter.
		q.mu.Lock()
		defer q.mu.Unlock()
		if len(q.processing) == 0 {
			return nil
		}
		return fmt.Errorf("drain queue %q: %w: %d keys still in flight (%v among them)",
			q.opts.Name, ErrDrainStopped, len(q.processing), q.processing[0].key)
	case <-ctx.Done():
		q.mu.Lock()
		defer q.mu.Unlock()
		if len(q.processing) == 0 {
			return nil
		}
		return fmt.Errorf("drain queue %q: %d keys still in flight (%v among them): %w",
			q.opts.Name, len(q.processing), q.processing[0].key, context.Cause(ctx))
	}
}
