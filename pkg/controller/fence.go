package controller

import (
	"context"
	"time"

	"github.com/opkit-dev/opkit/internal/fence"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// fenced holds key, before its reconcile starts, while the context carries
// a closed leadership fence (a leader-only controller whose process is not
// sure it still holds its lease, or whose lease is lost until it is
// acquired again; see manager.ErrFenced). It reports whether the reconcile
// may start: false once stop has ended, after queueing key again.
func (c *Controller[K]) fenced(ctx, stop context.Context, key K) bool {
	f := fence.FromContext(ctx)
	if f == nil {
		return true
	}
	err := f.Check()
	if err == nil {
		return true
	}
	if c.waiting.Add(1) == 1 {
		c.log.Info("Not starting reconciles until the lease is renewed", "reason", err.Error())
	}
	err = f.Wait(stop)
	if c.waiting.Add(-1) == 0 && err == nil {
		c.log.Info("The lease was renewed: reconciling again")
	}
	if err == nil {
		return true
	}
	c.queue.Add(key)
	return false
}

// stillLeads checks the fence once more, right before key's reconcile
// would start: the gate, a wait for this replica's own writes, or a pause
// of the whole process (a frozen leader) may have let it close since
// fenced let key through. It returns the clock reading the check was made
// at, which dates the reconcile's start (its span), so that a reconcile
// dated after the fence closed never started; zero without a fence. A
// closed fence queues key again, as a write the fence refused does (no
// backoff, its priority and the time of its change kept), for fenced to
// hold, and reports false.
func (c *Controller[K]) stillLeads(ctx context.Context, key K, priority int, changed time.Time) (time.Time, bool) {
	f := fence.FromContext(ctx)
	if f == nil {
		return time.Time{}, true
	}
	now := time.Now()
	if f.CheckAt(now) == nil {
		return now, true
	}
	c.queue.AddWithOpts(queue.AddOpts{Priority: priority, Changed: changed}, key)
	return time.Time{}, false
}
