package controller

import (
	"context"
	"time"

	"github.com/opkit-dev/opkit/internal/budget"
	"github.com/opkit-dev/opkit/internal/queueaccess"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// worker is how one worker takes keys: a regular worker's from the
// queue's Get, a spare's from GetSpare; and, under a limited API budget,
// only once the budget has granted it a token (see next).
type worker[K comparable] struct {
	spare bool
	// budget is the manager's API budget, which Start's context carries;
	// nil without one. prepaid is the worker's pre-paid token of it, and
	// permitted the queue's side that waits for it.
	budget    *budget.Budget
	prepaid   *budget.Prepaid
	permitted queueaccess.Queue[K]
}

func (c *Controller[K]) newWorker(b *budget.Budget, spare bool) *worker[K] {
	w := &worker[K]{spare: spare, budget: b}
	if b != nil {
		w.prepaid = b.Prepay(c.name)
		w.permitted = queue.Internal(c.queue, queueaccess.Key{})
	}
	return w
}

// next hands out w's next key, with its priority and change time, or
// shutdown once the queue shuts down or stop ends. While the API budget
// is limited, w first waits for a token of the controller's share, once a
// key is ready for it, holding no key: the keys wait in the queue, where
// their priorities and tenants order them, rather than each in a worker
// whose first request waits for the budget. It then takes the key first
// in the queue, and the reconcile's first request spends the token (see
// budget.Prepaid); processNext gives it back if none did. Unlimited (the
// default until the API server pushes back), w takes keys as without a
// budget.
func (c *Controller[K]) next(stop context.Context, w *worker[K]) (key K, priority int, changed time.Time, shutdown bool) {
	workers := c.opts.MaxConcurrentReconciles
	switch limited := w.budget != nil && w.budget.Limited(); {
	case limited && w.spare:
		return w.permitted.GetSpareChanged(stop, workers, w.prepaid)
	case limited:
		return w.permitted.GetChanged(stop, w.prepaid)
	case w.spare:
		return c.queue.GetSpareChanged(workers)
	default:
		return c.queue.GetChanged()
	}
}
