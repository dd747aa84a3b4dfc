package controller

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/trace"

	"github.com/opkit-dev/opkit/internal/budget"
	"github.com/opkit-dev/opkit/internal/fence"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// processNext reconciles the next key that w takes (see next), and reports
// false once the queue has shut down. ctx is the reconciles' context; stop
// ends when the controller stops handing out keys. A key let go
// unreconciled, to be queued again, keeps the time of its change, so that
// its reconcile's lag counts the wait.
func (c *Controller[K]) processNext(ctx, stop context.Context, w *worker[K]) bool {
	key, priority, changed, shutdown := c.next(stop, w)
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	// A token pre-paid for the key and not spent (a reconcile served from
	// the cache, a key the gate turned away) goes back to the budget.
	defer w.prepaid.Release()
	// A leader that is not sure it still leads starts nothing.
	if !c.fenced(ctx, stop, key) {
		return true
	}
	// The gate comes first: a key of a slot this replica does not hold
	// must neither wait for the cache nor be reconciled.
	done, ok := c.admit(key, changed)
	if !ok {
		return true
	}
	if c.writes != nil && c.writes.park(ctx, c.log, c.queue, key, priority, changed) {
		done(true)
		return true
	}
	at, ok := c.stillLeads(ctx, key, priority, changed)
	if !ok {
		done(true)
		return true
	}
	c.metrics.ActiveWorkers.Inc()
	defer c.metrics.ActiveWorkers.Dec()
	done(c.handle(ctx, key, priority, changed, at, w.prepaid))
	return true
}

// handle reconciles key and acts on the outcome: forget it, requeue it, or
// retry it with backoff. A requeue keeps the priority the key was handed
// out with unless the Result sets one. changed is when the change that
// queued key happened, if known; prepaid is the worker's pre-paid token,
// if any, which the reconcile's first request may spend. It reports
// whether key was queued again. admitted, if not zero, is when the
// leadership fence let the reconcile start: its span starts then.
func (c *Controller[K]) handle(ctx context.Context, key K, priority int, changed, admitted time.Time, prepaid *budget.Prepaid) bool {
	rc := &reconcileContext{Context: ctx, id: newReconcileID(), recording: c.writes != nil, prepaid: prepaid}
	log := c.log.WithValues(values(rc, key)...)
	rc.logger = log
	if logrContextKey == nil { // a logr that looks loggers up otherwise
		rc.Context = logr.NewContext(ctx, log)
	}
	if rc.recording {
		defer c.writes.after(key, &rc.writes)
	}
	ctx = rc
	var span trace.Span
	if c.tracer != nil {
		ctx, span = c.tracer.start(ctx, key, rc.id.String(), changed, admitted)
	}

	// One clock reading times the reconcile and dates its start for the
	// lag.
	start := c.clock.Now()
	c.lag.reconcileStarts(changed, start)
	res, err := c.reconcile(ctx, key)
	took := time.Since(start)
	c.metrics.Time.Observe(took.Seconds())
	if p, ok := res.Priority(); ok {
		priority = p
	}
	result, requeued := c.settle(log, key, priority, res, err, took)
	if span != nil {
		var after time.Duration
		if result == imetrics.ResultRequeueAfter {
			after, _ = res.Requeue()
		}
		c.tracer.end(span, key, result, after, err, requeued)
	}
	return requeued
}

// settle acts on a reconcile's outcome: forget key, requeue it, or retry it
// with backoff; counts and logs it. It returns the outcome as the result
// label of the reconcile metrics says it, and whether key was queued
// again.
func (c *Controller[K]) settle(log logr.Logger, key K, priority int, res reconcile.Result, err error, took time.Duration) (string, bool) {
	after, requeue := res.Requeue()
	// The V(1) lines are built only when enabled: their values would take
	// an allocation per reconcile even when nothing is logged.
	v1 := log.V(1)
	if err != nil && requeue && v1.Enabled() {
		v1.Info("The reconciler returned both an error and a requeue; the requeue is ignored", "result", res.String())
	}
	switch {
	case errors.Is(err, reconcile.ErrTerminal):
		c.queue.Forget(key)
		c.metrics.Error.Inc()
		c.metrics.Errors.Inc()
		c.metrics.Terminal.Inc()
		log.Error(err, "Reconcile failed with a terminal error; not retrying until the object changes")
		return imetrics.ResultError, false
	case errors.Is(err, fence.ErrFenced):
		// A write refused because the lease may be lost: the key waits at
		// the fence, without backoff, for the next renewal.
		c.queue.AddWithOpts(queue.AddOpts{Priority: priority}, key)
		c.metrics.Error.Inc()
		c.metrics.Errors.Inc()
		log.Info("Reconcile stopped: a write was refused because this replica is not sure it still holds its lease; retrying once it is renewed", "error", err.Error())
		return imetrics.ResultError, true
	case err != nil:
		c.queue.AddWithOpts(queue.AddOpts{RateLimited: true, Priority: priority}, key)
		c.metrics.Error.Inc()
		c.metrics.Errors.Inc()
		log.Error(err, "Reconcile failed; retrying with backoff", "retries", c.queue.NumRequeues(key))
		return imetrics.ResultError, true
	case !requeue:
		c.queue.Forget(key)
		c.metrics.Success.Inc()
		if v1.Enabled() {
			v1.Info("Reconciled", "seconds", took.Seconds())
		}
		return imetrics.ResultSuccess, false
	case after > 0:
		c.queue.Forget(key)
		c.queue.AddWithOpts(queue.AddOpts{After: after, Priority: priority}, key)
		c.metrics.RequeueAfter.Inc()
		if v1.Enabled() {
			v1.Info("Reconciled; requeued", "after", after.String(), "seconds", took.Seconds())
		}
		return imetrics.ResultRequeueAfter, true
	default:
		c.queue.AddWithOpts(queue.AddOpts{RateLimited: true, Priority: priority}, key)
		c.metrics.Requeue.Inc()
		if v1.Enabled() {
			v1.Info("Reconciled; requeued with backoff", "seconds", took.Seconds())
		}
		return imetrics.ResultRequeue, true
	}
}

// reconcile calls the reconciler under the per-reconcile timeout, turning a
// panic into an error unless Options.CrashOnPanic is set.
func (c *Controller[K]) reconcile(ctx context.Context, key K) (res reconcile.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.metrics.Panics.Inc()
			if c.opts.CrashOnPanic {
				panic(r)
			}
			logr.FromContextOrDiscard(ctx).Error(fmt.Errorf("%v", r), "Reconciler panicked; recovered, will retry with backoff", "stack", string(debug.Stack()))
			res, err = reconcile.Done(), fmt.Errorf("reconciler panicked: %v [recovered]", r)
		}
	}()
	if c.opts.ReconcileTimeout > 0 {
		cause := fmt.Errorf("%w after %v (Options.ReconcileTimeout)", ErrReconcileTimeout, c.opts.ReconcileTimeout)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.opts.ReconcileTimeout, cause)
		defer func() {
			// Counted only when this timeout, not a parent's cancel, ended it.
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && errors.Is(context.Cause(ctx), ErrReconcileTimeout) {
				c.metrics.Timeouts.Inc()
			}
			cancel()
		}()
	}
	return c.reconciler.Reconcile(ctx, key)
}
