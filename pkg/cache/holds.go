package cache

import (
	"slices"
	"sync/atomic"
)

// hold is one Lister's claim on its registration, for TypeOptions.Owner.
type hold struct {
	owner    string
	released atomic.Bool
}

// acquire records a new Lister of r for owner, and returns its hold; nil
// for no owner, which pins r for the cache's life. The caller holds c.mu.
func (r *registration) acquire(owner string) *hold {
	if owner == "" {
		r.pinned = true
		return nil
	}
	if r.holds == nil {
		r.holds = map[string]int{}
	}
	r.holds[owner]++
	return &hold{owner: owner}
}

// release drops h (once) from r, and stops r if that was its last hold and
// no unowned registration pinned it.
func (r *registration) release(h *hold) {
	if h == nil || !h.released.CompareAndSwap(false, true) {
		return
	}
	c := r.c
	c.mu.Lock()
	// A removed r has no holds: delete is a no-op on its nil map.
	if n := r.holds[h.owner]; n > 1 {
		r.holds[h.owner] = n - 1
	} else {
		delete(r.holds, h.owner)
	}
	stop := func() {}
	if len(r.holds) == 0 && !r.pinned {
		stop = c.dropLocked(r)
	}
	c.mu.Unlock()
	stop()
}

// dropLocked marks r removed, takes it out of the cache and deletes its
// metric series, and returns what stops its informers, which the caller
// calls once it has unlocked c.mu. Doing the first part under c.mu orders
// it before any later registration of the same key: that one is a new
// registration, whose series this one's removal cannot delete. The caller
// holds c.mu; a removed r is left alone.
func (c *Cache) dropLocked(r *registration) (stop func()) {
	r.mu.Lock()
	if r.removed {
		r.mu.Unlock()
		return func() {}
	}
	r.removed = true
	r.view.Store(nil)
	cancel := r.cancel
	r.holds = nil
	r.mu.Unlock()
	c.regs = slices.DeleteFunc(c.regs, func(x *registration) bool { return x == r })
	c.metrics.forgetLocked(r, c.regs)
	return func() {
		if cancel != nil {
			cancel()
		}
		close(r.removedCh)
	}
}
