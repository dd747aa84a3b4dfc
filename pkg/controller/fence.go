package controller

import (
	"context"

	"github.com/opkit-dev/opkit/internal/fence"
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
