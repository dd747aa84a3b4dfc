package source

import (
	"context"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// Lag is what a controller measures of the sources it starts (see
// WithLag).
type Lag struct {
	// Queued returns the observer, for the events of type typ (as in
	// HandlerPanic.Type), of the seconds from an informer's delivery of an
	// event to the return of the handler that queued its keys (the
	// predicates, map functions and queue adds; pkg/cache dates the
	// delivery as it begins to store the event, so its store counts
	// too). Nil: not observed.
	Queued func(typ string) func(seconds float64)
	// Changes makes Enqueue, and so every handler of this package, add
	// each key with its event's change time (Event.Changed) as
	// queue.AddOpts.Changed, which the queue hands out with the key
	// (queue.Queue.GetChanged). False: keys are added without it, and the
	// queue keeps none.
	Changes bool
}

type lagKey struct{}

// WithLag returns a copy of ctx under which the informer sources (Kind,
// Informer) started with it measure lag as l says. A controller with
// metrics starts its sources so.
func WithLag(ctx context.Context, l Lag) context.Context {
	return context.WithValue(ctx, lagKey{}, l)
}

func lagFrom(ctx context.Context) Lag {
	l, _ := ctx.Value(lagKey{}).(Lag)
	return l
}

// Enqueue adds keys to q at e's priority and, when the controller measures
// lag, with e.Changed as their change time, so that the reconcile they
// cause observes its lag end to end. Handlers of your own should queue
// with it.
func Enqueue[T cache.Object, K comparable](e Event[T], q *queue.Queue[K], keys ...K) {
	opts := queue.AddOpts{Priority: e.Priority()}
	if e.changes {
		opts.Changed = e.Changed
	}
	q.AddWithOpts(opts, keys...)
}
