package cache

import (
	"cmp"
	"slices"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// hold is one Lister's claim on its registration, for TypeOptions.Owner.
type hold struct {
	owner    string
	released atomic.Bool
}

// Hold is what one owner holds: the Listers it registered with
// TypeOptions.Owner set to its name and has not released, on one cached
// type and scope.
type Hold struct {
	// Owner is TypeOptions.Owner.
	Owner string                  `json:"owner"`
	GVK   schema.GroupVersionKind `json:"gvk"`
	// Form is "typed", "metadata" or "unstructured".
	Form string `json:"form"`
	// Namespaces the type is cached in; empty for every namespace.
	Namespaces []string `json:"namespaces,omitempty"`
	// Selector is the label and field selector, if any.
	Selector string `json:"selector,omitempty"`
	// Listers is how many of the owner's Listers hold the type.
	Listers int `json:"listers"`
}

// Holds returns every named owner's holds, sorted by owner, then kind.
// Types registered without an owner, held for the cache's life, are not
// listed: Status lists every type. The manager serves it as JSON at
// /debug/holds on its metrics server.
func (c *Cache) Holds() []Hold {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Hold
	for _, r := range c.regs {
		for owner, n := range r.holds {
			out = append(out, Hold{
				Owner: owner, GVK: r.key.gvk, Form: r.key.form.String(),
				Namespaces: slices.Clone(r.namespaces), Selector: r.key.selector, Listers: n,
			})
		}
	}
	slices.SortFunc(out, func(a, b Hold) int {
		return cmp.Or(cmp.Compare(a.Owner, b.Owner), cmp.Compare(a.GVK.String(), b.GVK.String()),
			cmp.Compare(a.Form, b.Form), slices.Compare(a.Namespaces, b.Namespaces), cmp.Compare(a.Selector, b.Selector))
	})
	return out
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
