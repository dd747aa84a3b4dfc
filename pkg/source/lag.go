package source

import (
	"context"
	"sync"
	"time"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// ChangeTimes carries, from the sources to the workers, when the changes
// behind each queued key happened at the API server: the earliest change
// not yet taken, so that when several changes of one key coalesce into one
// reconcile, the reconcile's lag is that of the oldest. A controller makes
// one, starts its sources under WithLag, and takes a key's time when a
// worker gets the key. It stays off the queue's hot path: one map
// operation under its own lock per key queued and per key taken, and none
// when a controller measures no lag. Safe for concurrent use.
type ChangeTimes[K comparable] struct {
	mu sync.Mutex
	m  map[K]time.Time
}

// NewChangeTimes returns an empty ChangeTimes.
func NewChangeTimes[K comparable]() *ChangeTimes[K] {
	return &ChangeTimes[K]{m: map[K]time.Time{}}
}

// Record notes that a change at t queued key, unless an earlier change
// not yet taken did.
func (c *ChangeTimes[K]) Record(key K, t time.Time) {
	c.mu.Lock()
	if old, ok := c.m[key]; !ok || t.Before(old) {
		c.m[key] = t
	}
	c.mu.Unlock()
}

// Take returns and forgets the earliest change time recorded for key
// since the last Take, and false if there is none (a key queued by a
// retry, a timer or a change of unknown time).
func (c *ChangeTimes[K]) Take(key K) (time.Time, bool) {
	c.mu.Lock()
	t, ok := c.m[key]
	if ok {
		delete(c.m, key)
	}
	c.mu.Unlock()
	return t, ok
}

// Lag is what a controller measures of the sources it starts (see
// WithLag). Either field may be nil.
type Lag[K comparable] struct {
	// Queued returns the observer, for the events of type typ (as in
	// HandlerPanic.Type), of the seconds from an informer's delivery of an
	// event to the return of the handler that queued its keys (the
	// predicates, map functions and queue adds).
	Queued func(typ string) func(seconds float64)
	// Changes records the change time (Event.Changed) of every key queued
	// through Enqueue, and so through every handler of this package.
	Changes *ChangeTimes[K]
}

type lagKey struct{}

// WithLag returns a copy of ctx under which the informer sources (Kind,
// Informer) started with it measure lag as l says. A controller with
// metrics starts its sources so.
func WithLag[K comparable](ctx context.Context, l Lag[K]) context.Context {
	return context.WithValue(ctx, lagKey{}, l)
}

func lagFrom[K comparable](ctx context.Context) Lag[K] {
	l, _ := ctx.Value(lagKey{}).(Lag[K])
	return l
}

// Enqueue adds keys to q at e's priority and, when the controller measures
// lag, records e.Changed for each, so that the reconcile they cause
// observes its lag end to end. Handlers of your own should queue with it.
func Enqueue[T cache.Object, K comparable](e Event[T], q *queue.Queue[K], keys ...K) {
	if ct, ok := e.changes.(*ChangeTimes[K]); ok && !e.Changed.IsZero() {
		for _, k := range keys {
			ct.Record(k, e.Changed)
		}
	}
	q.AddWithOpts(queue.AddOpts{Priority: e.Priority()}, keys...)
}
