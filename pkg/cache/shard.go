package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/sharding"
)

// ShardingOptions configure the types registered with TypeOptions.Sharded.
// The zero value is valid.
type ShardingOptions struct {
	// Slots divides objects into slots. Defaults to sharding's zero Slots:
	// one slot, which holds every object.
	Slots sharding.Slots

	// ServerFilter says whether the API server applies shard selectors.
	// Defaults to ServerFilterDetect.
	ServerFilter ServerFilter
}

// ServerFilter says whether sharded types are filtered by the API server.
type ServerFilter uint8

const (
	// ServerFilterDetect asks the API server once, with sharding.Supported
	// on the resource of the first sharded type whose informers are made.
	// A failed probe counts as no support: the cache then filters itself,
	// which is correct, only costlier.
	ServerFilterDetect ServerFilter = iota
	// ServerFilterOn sends shard selectors without asking.
	ServerFilterOn
	// ServerFilterOff never sends shard selectors: every sharded informer
	// receives the whole stream and keeps only its slots' objects.
	ServerFilterOff
)

// ErrNotSharded is wrapped by SetSlots' error when the cache has no
// sharded type.
var ErrNotSharded = errors.New("no sharded type in the cache")

// SetSlots makes every sharded type (TypeOptions.Sharded) cache exactly the
// objects of slots (of ShardingOptions.Slots), and returns once every
// started type holds them, synced, and its event handlers have been handed
// them, or ctx ends. An empty slots holds
// nothing and watches nothing. Before Start, and for a type not yet
// installed, it only records the slots: the type's informers start with
// them, and WaitForSync waits for them.
//
// For each started type, SetSlots makes new informers for the new slot
// set, waits for them to sync while the old ones keep serving reads, then
// swaps them in one step: Lister reads see the old set or the new one,
// never a gap. Event handlers are then handed a delete for each object the
// type no longer holds, and, from the new informers, an add for each
// object of a gained slot; objects held throughout are not handed to them
// again unless they changed. Calls are serialised. If ctx ends before the
// new informers sync they are dropped (handlers get a delete for each
// object of theirs the old set does not hold, whose add they may have been
// handed), the old set stays, and the error wraps ErrNotSynced and ctx's
// cause: call SetSlots again.
//
// Every read contract of the cache (one store per namespace, zero-copy,
// sorted, indexes, ControlledBy, Lazy, read-your-writes) holds across a
// swap, and read-your-writes waits only for writes of held slots. One
// informer set per slot set, rather than one informer per run of slots
// gained together, gives reads that never merge or deduplicate stores.
// Where the API server filters by shard selector, the new informers list
// from it only the gained slots' objects, and take those of the slots
// held throughout from the old informers' stores, as of the resource
// version the gained slots are listed at; elsewhere (or if that list
// fails) they list the whole new set, which without server filtering
// means every object of the type. The cache's opkit_cache_slots counts
// each type's slots; TypeStatus.Slots lists them.
func (c *Cache) SetSlots(ctx context.Context, slots []int) error {
	if len(slots) > 0 {
		if _, err := c.opts.Sharding.Slots.Selector(sharding.ByUID, slots); err != nil {
			return fmt.Errorf("cache: set slots %v: %w", slots, err)
		}
	}
	slots = slices.Sorted(slices.Values(slots))
	c.slotsMu.Lock()
	defer c.slotsMu.Unlock()
	regs := c.registered(func(k regKey) bool { return k.sharded })
	if len(regs) == 0 {
		return fmt.Errorf("cache: set slots: %w: register a type with TypeOptions.Sharded", ErrNotSharded)
	}
	c.mu.Lock()
	c.slots = slots
	c.mu.Unlock()
	var errs []error
	for _, r := range regs {
		if err := r.setSlots(ctx, slots); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// setSlots swaps r's view for one of slots, once it has synced.
func (r *registration) setSlots(ctx context.Context, slots []int) error {
	r.mu.Lock()
	old := r.view.Load()
	r.slots = slots
	spawn, mapping := r.spawn, r.mapping
	if old != nil && spawn != nil {
		// buildView reads r.indexers without r.mu: no index may be added
		// meanwhile (see addLiveIndex).
		r.slotting++
		defer func() {
			r.mu.Lock()
			r.slotting--
			r.mu.Unlock()
		}()
	}
	r.mu.Unlock()
	if old == nil || spawn == nil {
		return nil // run makes the informers with r.slots
	}
	next, err := r.buildView(ctx, mapping, slots)
	if err != nil {
		return fmt.Errorf("cache: set slots of %s: %w", r.key.gvk, err)
	}
	if err := r.seed(ctx, mapping, next, old); err != nil {
		// Only what next lists is at stake: all of it, as unseeded.
		r.c.log.Error(err, "Cannot list only the gained slots; listing every held slot", "type", r.key.gvk.String())
	}
	if err := r.attachHandlers(next, old); err != nil {
		r.detachHandlers(next)
		return err
	}
	next.stop = spawn(next)
	// Handlers added while the informers sync are attached to next too:
	// look again for them once the first ones have synced.
	if !toolscache.WaitFor(ctx, "", append(next.syncedCheckers(), r.handlerCheckers(next)...)...) ||
		!toolscache.WaitFor(ctx, "", r.handlerCheckers(next)...) {
		r.detachHandlers(next)
		next.stop()
		r.deliverLost(next, old) // the adds next handed on of slots not kept
		next.released()
		return fmt.Errorf("cache: set slots of %s: informers not synced: %w: %w", r.key.gvk, ErrNotSynced, context.Cause(ctx))
	}
	r.mu.Lock()
	r.next = nil
	if r.removed {
		r.mu.Unlock()
		next.stop()
		next.released()
		return nil
	}
	r.view.Store(next)
	r.mu.Unlock()
	r.detachHandlers(old)
	old.stop()
	r.deliverLost(old, next)
	next.released() // the initial lists are handed on: let old go
	return nil
}

// released drops v's hold on the view it replaced: the swap is over.
func (v *view) released() {
	if v.replacing != nil {
		v.replacing.Store(nil)
	}
}

// attachHandlers adds r's handlers to next before it starts. Adds from
// next's initial list of objects old already holds at the same
// resourceVersion are not handed on: the handler has seen them.
func (r *registration) attachHandlers(next, old *view) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next = next
	for _, h := range r.handlers {
		if err := h.attachTo(next, old); err != nil {
			return err
		}
	}
	return nil
}

// handlerCheckers returns what to wait on for r's handlers to have been
// handed the initial lists of v's informers.
func (r *registration) handlerCheckers(v *view) []toolscache.DoneChecker {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []toolscache.DoneChecker
	for _, h := range r.handlers {
		for _, i := range v.informers {
			if reg, ok := h.regs[i]; ok && !i.idle {
				out = append(out, reg.HasSyncedChecker())
			}
		}
	}
	return out
}

func (r *registration) detachHandlers(v *view) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == v {
		r.next = nil
	}
	for _, h := range r.handlers {
		h.detach(v)
	}
}

// deliverLost hands every handler a delete for each object old holds and
// next does not: the objects of lost slots.
func (r *registration) deliverLost(old, next *view) {
	r.mu.Lock()
	handlers := slices.Clone(r.handlers)
	r.mu.Unlock()
	for _, i := range old.informers {
		for _, obj := range i.indexer.List() {
			key, err := toolscache.MetaNamespaceKeyFunc(obj)
			if err != nil || next.holds(key) {
				continue
			}
			for _, h := range handlers {
				h.handler.OnDelete(obj)
			}
		}
	}
}

// holds reports whether any informer of v holds key.
func (v *view) holds(key string) bool {
	for _, i := range v.informers {
		if _, ok, _ := i.indexer.GetByKey(key); ok {
			return true
		}
	}
	return false
}

// syncedCheckers returns what to wait on for v's informers to sync; an
// idle informer (no slots) never runs and is synced, empty, from the start.
func (v *view) syncedCheckers() []toolscache.DoneChecker {
	var out []toolscache.DoneChecker
	for _, i := range v.informers {
		if !i.idle {
			out = append(out, i.informer.HasSyncedChecker())
		}
	}
	return out
}

// shardFilter is how one informer of a sharded type keeps to its slots:
// the API server filters with selector, or, when selector is "", the
// informer keeps what arrives of the held slots only.
type shardFilter struct {
	selector string
	slots    sharding.Slots
	key      sharding.Key
	held     map[int]struct{}
}

// newShardFilter returns the filter for slots, or nil for an empty set
// (the informer is idle).
func (r *registration) newShardFilter(ctx context.Context, mapping *meta.RESTMapping, slots []int) (*shardFilter, error) {
	if len(slots) == 0 {
		return nil, nil
	}
	f := &shardFilter{slots: r.c.opts.Sharding.Slots, key: r.opts.ShardKey}
	if f.key != sharding.ByControllerOwner && r.c.serverFilters(ctx, r, mapping) {
		sel, err := f.slots.Selector(f.key, slots)
		if err != nil {
			return nil, fmt.Errorf("render shard selector: %w", err)
		}
		f.selector = sel
		return f, nil
	}
	f.held = make(map[int]struct{}, len(slots))
	for _, slot := range slots {
		f.held[slot] = struct{}{}
	}
	return f, nil
}

// keep reports whether obj is of a held slot.
func (f *shardFilter) keep(obj any) bool {
	o, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	_, ok := f.held[f.slots.SlotOf(f.key, o)]
	return ok
}

// wrap makes lw send the selector, or keep only the held slots' objects.
func (f *shardFilter) wrap(lw *toolscache.ListWatch) *toolscache.ListWatch {
	list, watchFn := lw.ListWithContextFunc, lw.WatchFuncWithContext
	if f.selector != "" {
		return &toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				opts.ShardSelector = f.selector
				return list(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				opts.ShardSelector = f.selector
				return watchFn(ctx, opts)
			},
		}
	}
	e := &emitted{f: f, keys: map[string]struct{}{}}
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			obj, err := list(ctx, opts)
			if err != nil || obj == nil {
				return obj, err
			}
			return obj, e.filterList(obj)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := watchFn(ctx, opts)
			if err != nil {
				return w, err
			}
			return watch.Filter(w, e.pass), nil
		},
	}
}

// emitted filters one informer's lists and watches by slot, and remembers
// the keys it passed on, so that an object whose slot changes (a new
// controller owner, under ByControllerOwner) leaves the informer as a
// delete. A key may outlive its object across a relist; it then costs at
// most one delete of an object the informer does not hold, which the
// informer hands on harmlessly.
type emitted struct {
	f    *shardFilter
	mu   sync.Mutex
	keys map[string]struct{}
}

func (e *emitted) pass(ev watch.Event) (watch.Event, bool) {
	key, err := toolscache.MetaNamespaceKeyFunc(ev.Object)
	if ev.Type == watch.Bookmark || ev.Type == watch.Error || err != nil {
		return ev, true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, seen := e.keys[key]
	switch {
	case ev.Type == watch.Deleted:
		delete(e.keys, key)
		return ev, seen || e.f.keep(ev.Object)
	case e.f.keep(ev.Object):
		e.keys[key] = struct{}{}
		return ev, true
	case seen:
		delete(e.keys, key)
		return watch.Event{Type: watch.Deleted, Object: ev.Object}, true
	}
	return ev, false
}

// filterList keeps the held slots' items of a list, and remembers them.
func (e *emitted) filterList(list runtime.Object) error {
	items, err := meta.ExtractListWithAlloc(list)
	if err != nil {
		return fmt.Errorf("filter list by slot: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	clear(e.keys)
	kept := items[:0]
	for _, it := range items {
		if e.f.keep(it) {
			kept = append(kept, it)
			if key, err := toolscache.MetaNamespaceKeyFunc(it); err == nil {
				e.keys[key] = struct{}{}
			}
		}
	}
	if err := meta.SetList(list, kept); err != nil {
		return fmt.Errorf("filter list by slot: %w", err)
	}
	return nil
}

// serverFilters reports whether the API server applies shard selectors,
// probing once per cache with ServerFilterDetect.
func (c *Cache) serverFilters(ctx context.Context, r *registration, mapping *meta.RESTMapping) bool {
	switch c.opts.Sharding.ServerFilter {
	case ServerFilterOn:
		return true
	case ServerFilterOff:
		return false
	}
	c.probeOnce.Do(func() {
		c.probed = c.probe(ctx, r, mapping)
		c.probeKnown.Store(true)
	})
	return c.probed
}

// ServerFiltered reports whether the API server filters every sharded
// type (TypeOptions.Sharded) by its slots' shard selector, so that a
// change of slots lists only the gained slots' objects (see SetSlots). It
// is false without a sharded type, with a type sharded by
// sharding.ByControllerOwner (which the cache filters itself), with
// ServerFilterOff, and with ServerFilterDetect until the first sharded
// informers are made and the probe finds support.
func (c *Cache) ServerFiltered() bool {
	regs := c.registered(func(k regKey) bool { return k.sharded })
	if len(regs) == 0 {
		return false
	}
	for _, r := range regs {
		if r.opts.ShardKey == sharding.ByControllerOwner {
			return false
		}
	}
	switch c.opts.Sharding.ServerFilter {
	case ServerFilterOn:
		return true
	case ServerFilterOff:
		return false
	}
	return c.probeKnown.Load() && c.probed
}

func (c *Cache) probe(ctx context.Context, r *registration, mapping *meta.RESTMapping) bool {
	cfg := rest.CopyConfig(c.cfg)
	cfg.NegotiatedSerializer = nil
	client, err := metadata.NewForConfigAndClient(cfg, c.opts.HTTPClient)
	if err == nil {
		var ok bool
		ns := ""
		if len(r.namespaces) > 0 && mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ns = r.namespaces[0]
		}
		ok, err = sharding.Supported(ctx, client, mapping.Resource, ns)
		if err == nil {
			c.log.Info("Probed shard selector support", "supported", ok, "resource", mapping.Resource.String())
			return ok
		}
	}
	c.log.Error(err, "Cannot probe shard selector support; filtering sharded types in the cache")
	return false
}
