package cache

import (
	"fmt"
	"slices"

	toolscache "k8s.io/client-go/tools/cache"
)

// HandlerRegistration is an event handler added with Lister.AddEventHandler.
// Its methods are safe for concurrent use.
type HandlerRegistration struct {
	reg     *registration
	handler toolscache.ResourceEventHandler
	// regs are the handler's registrations with the type's informers, one
	// per informer; nil until the informers exist. Guarded by reg.mu.
	regs []toolscache.ResourceEventHandlerRegistration
}

// AddEventHandler hands every event of the type to h: an add for each object
// already cached (isInInitialList true) and then every add, update and
// delete, including a resync's updates. A type the API server does not serve
// yet gets its handlers as soon as its informers are made, so a handler
// added before Start, or before a CRD is installed, misses nothing.
//
// h is called from the informer's delivery goroutine, one event at a time
// per informer: it must not block. A type cached in several namespaces has
// one informer per namespace, and h is called from each.
func (l *Lister[T]) AddEventHandler(h toolscache.ResourceEventHandler) (*HandlerRegistration, error) {
	return l.reg.addHandler(h)
}

// HasSynced reports whether the handler has been handed every object of the
// type's initial lists.
func (h *HandlerRegistration) HasSynced() bool {
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	if h.regs == nil {
		return false
	}
	for _, r := range h.regs {
		if !r.HasSynced() {
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
	if v := r.view.Load(); v != nil {
		for i, reg := range h.regs {
			if err := v.informers[i].informer.RemoveEventHandler(reg); err != nil {
				errs = append(errs, err)
			}
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
	if v := r.view.Load(); v != nil {
		if err := hr.attach(v); err != nil {
			return nil, err
		}
	}
	r.handlers = append(r.handlers, hr)
	return hr, nil
}

// attach adds the handler to the informers of v. The caller holds reg.mu.
func (h *HandlerRegistration) attach(v *view) error {
	regs := make([]toolscache.ResourceEventHandlerRegistration, 0, len(v.informers))
	for _, i := range v.informers {
		handler := h.handler
		if th, ok := handler.(TimedEventHandler); ok && i.stamps != nil {
			handler = timedHandler{h: th, stamps: i.stamps}
		}
		reg, err := i.informer.AddEventHandler(handler)
		if err != nil {
			for j, done := range regs {
				_ = v.informers[j].informer.RemoveEventHandler(done)
			}
			return fmt.Errorf("cache: add event handler to %s: %w", h.reg.key.gvk, err)
		}
		regs = append(regs, reg)
	}
	h.regs = regs
	return nil
}
