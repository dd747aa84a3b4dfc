package cache

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/internal/informer"
)

// HandlerRegistration is an event handler added with Lister.AddEventHandler.
// Its methods are safe for concurrent use.
type HandlerRegistration struct {
	reg     *registration
	handler toolscache.ResourceEventHandler
	// regs are the handler's registrations with the informers of the
	// type's views: the current one, and the next while SetSlots makes it.
	// Guarded by reg.mu.
	regs map[*nsInformer]toolscache.ResourceEventHandlerRegistration
}

// AddEventHandler hands every event of the type to h: an add for each object
// already cached (isInInitialList true) and then every add, update and
// delete, including a resync's updates. A type the API server does not serve
// yet gets its handlers as soon as its informers are made, so a handler
// added before Start, or before a CRD is installed, misses nothing.
//
// h is called one event at a time per informer, from a goroutine that
// hands it the informer's events in order, as client-go's informers do:
// a slow h delays only itself, but it must not block. A type cached in
// several namespaces has one informer per namespace, and h is called from
// each. pkg/source's handlers, which only queue keys, are called on the
// informer's own delivery goroutine instead, which saves each event two
// hand-offs between goroutines.
func (l *Lister[T]) AddEventHandler(h toolscache.ResourceEventHandler) (*HandlerRegistration, error) {
	return l.reg.addHandler(h)
}

// HasSynced reports whether the handler has been handed every object of the
// type's initial lists.
func (h *HandlerRegistration) HasSynced() bool {
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	v := h.reg.view.Load()
	if v == nil {
		return false
	}
	for _, i := range v.informers {
		reg, ok := h.regs[i]
		if !ok || (!i.idle && !reg.HasSynced()) {
			return false
		}
	}
	return true
}

// Remove stops events reaching the handler.
func (h *HandlerRegistration) Remove() error {
	r := h.reg
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handlers = slices.DeleteFunc(r.handlers, func(x *HandlerRegistration) bool { return x == h })
	var errs []error
	for i, reg := range h.regs {
		if err := i.informer.RemoveEventHandler(reg); err != nil {
			errs = append(errs, err)
		}
	}
	h.regs = nil
	if len(errs) > 0 {
		return fmt.Errorf("cache: remove event handler of %s: %w", r.key.gvk, errs[0])
	}
	return nil
}

func (r *registration) addHandler(h toolscache.ResourceEventHandler) (*HandlerRegistration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removed {
		return nil, fmt.Errorf("cache: add event handler to %s: %w", r.key.gvk, ErrRemoved)
	}
	hr := &HandlerRegistration{reg: r, handler: h}
	v := r.view.Load()
	if v != nil {
		if err := hr.attachTo(v, nil); err != nil {
			return nil, err
		}
	}
	if r.next != nil {
		if err := hr.attachTo(r.next, v); err != nil {
			if v != nil {
				hr.detach(v)
			}
			return nil, err
		}
	}
	r.handlers = append(r.handlers, hr)
	return hr, nil
}

// attachTo adds the handler to the informers of v. With old, v replaces
// it: adds of v's initial lists that old holds at the same resourceVersion
// are not handed on. The caller holds reg.mu.
func (h *HandlerRegistration) attachTo(v, old *view) error {
	if h.regs == nil {
		h.regs = map[*nsInformer]toolscache.ResourceEventHandlerRegistration{}
	}
	if old != nil {
		if v.replacing == nil { // the caller holds reg.mu
			v.replacing = new(atomic.Pointer[view])
		}
		v.replacing.Store(old)
	}
	var done []*nsInformer
	for _, i := range v.informers {
		handler := h.handler
		if old != nil {
			handler = newUnseenAdds(handler, v.replacing)
		}
		handler = informer.Wrap(handler, h.handler)
		reg, err := i.informer.AddEventHandler(handler)
		if err != nil {
			for _, j := range done {
				_ = j.informer.RemoveEventHandler(h.regs[j])
				delete(h.regs, j)
			}
			return fmt.Errorf("cache: add event handler to %s: %w", h.reg.key.gvk, err)
		}
		h.regs[i] = reg
		done = append(done, i)
	}
	return nil
}

// detach removes the handler from the informers of v. The caller holds
// reg.mu.
func (h *HandlerRegistration) detach(v *view) {
	for _, i := range v.informers {
		if reg, ok := h.regs[i]; ok {
			_ = i.informer.RemoveEventHandler(reg)
			delete(h.regs, i)
		}
	}
}

// unseenAdds drops the adds of an initial list for objects that old, the
// view being replaced, holds at the same resourceVersion: the handler was
// handed them already. old points to the new view's replacing, which the
// swap clears once the initial lists are handed on, so that the handler
// does not keep the old view's objects for as long as the new one lives.
type unseenAdds struct {
	toolscache.ResourceEventHandler
	old *atomic.Pointer[view]
}

// newUnseenAdds returns h wrapped in unseenAdds, a timedEventHandler
// still if h is one.
func newUnseenAdds(h toolscache.ResourceEventHandler, old *atomic.Pointer[view]) toolscache.ResourceEventHandler {
	u := unseenAdds{ResourceEventHandler: h, old: old}
	if t, ok := h.(timedEventHandler); ok {
		return timedUnseenAdds{unseenAdds: u, timed: t}
	}
	return u
}

// seen reports whether obj is an add of an initial list that the old view
// holds at the same resourceVersion.
func (u unseenAdds) seen(obj any, initial bool) bool {
	if !initial {
		return false
	}
	old := u.old.Load()
	return old != nil && old.holdsVersion(obj)
}

func (u unseenAdds) OnAdd(obj any, initial bool) {
	if u.seen(obj, initial) {
		return
	}
	u.ResourceEventHandler.OnAdd(obj, initial)
}

type timedUnseenAdds struct {
	unseenAdds
	timed timedEventHandler
}

func (u timedUnseenAdds) OnAddAt(obj any, initial bool, changed, delivered time.Time) time.Time {
	if u.seen(obj, initial) {
		return time.Time{}
	}
	return u.timed.OnAddAt(obj, initial, changed, delivered)
}

func (u timedUnseenAdds) OnUpdateAt(oldObj, newObj any, changed, delivered time.Time) time.Time {
	return u.timed.OnUpdateAt(oldObj, newObj, changed, delivered)
}

func (u timedUnseenAdds) OnDeleteAt(obj any, changed, delivered time.Time) time.Time {
	return u.timed.OnDeleteAt(obj, changed, delivered)
}

// holdsVersion reports whether v holds obj at obj's resourceVersion.
func (v *view) holdsVersion(obj any) bool {
	o, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	key, err := toolscache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return false
	}
	for _, i := range v.informers {
		if held, ok, _ := i.indexer.GetByKey(key); ok {
			h, err := meta.Accessor(held)
			return err == nil && h.GetResourceVersion() == o.GetResourceVersion()
		}
	}
	return false
}
