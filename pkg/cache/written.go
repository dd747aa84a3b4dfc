package cache

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// writtenPoll is how often written.Wait looks again when no change of the
// store woke it: a watch bookmark moves a store's resource version without
// a change that wakes waiters.
const writtenPoll = 50 * time.Millisecond

// written is a write the cache is to catch up with, made by
// Cache.written (cacheaccess.Cache.Written): the write of one object, as seen by every informer of the
// cache that would hold the object. Its zero value has caught up.
type written struct {
	marks []mark
}

// mark is a write as one informer will see it.
type mark struct {
	// reg's view replaces inf's when SetSlots swaps it: the write is then
	// looked for in the informer that holds its slot now.
	reg             *registration
	slot            int // the object's slot, for a sharded registration
	inf             *nsInformer
	namespace, name string
	uid             types.UID
	resourceVersion string // the version the write returned; "" for a delete
	deleted         bool
}

// written returns the write of obj, of kind gvk, for CaughtUp and Wait:
// obj as the API server returned it from a create, update or patch (its
// resourceVersion is the write's), or, when deleted, the object deleted.
//
// Every registration of gvk, in every form, that would cache obj takes
// part: the one informer of the object's namespace in a cache of several
// namespaces, the informer of every namespace, or the one of a
// cluster-scoped kind; a registration whose label selector obj does not
// match, or whose namespaces do not include obj's, would never hold it and
// takes no part. Nor does one with a field selector on fields other than
// metadata.name and metadata.namespace, which the cache cannot evaluate.
// A kind not registered, or not yet started, gives a written that has
// caught up: there is no cached copy to be stale.
func (c *Cache) written(gvk schema.GroupVersionKind, obj metav1.Object, deleted bool) written {
	rv := obj.GetResourceVersion()
	if !deleted && rv == "" {
		return written{}
	}
	var w written
	for _, r := range c.registered(func(k regKey) bool { return k.gvk == gvk }) {
		v := r.view.Load()
		if v == nil || !r.wouldHold(obj) || !v.holdsSlotOf(r, obj) {
			continue
		}
		inf := v.informerOf(obj.GetNamespace())
		if inf == nil {
			continue
		}
		w.marks = append(w.marks, mark{
			reg: r, slot: r.slotOf(obj), inf: inf, namespace: obj.GetNamespace(), name: obj.GetName(),
			uid: obj.GetUID(), resourceVersion: rv, deleted: deleted,
		})
	}
	return w
}

// wouldHold reports whether obj matches the registration's selectors, as
// far as the cache can tell: false when it cannot.
func (r *registration) wouldHold(obj metav1.Object) bool {
	if s := r.opts.LabelSelector; s != nil && !s.Matches(labels.Set(obj.GetLabels())) {
		return false
	}
	s := r.opts.FieldSelector
	if s == nil || s.Empty() {
		return true
	}
	for _, req := range s.Requirements() {
		if req.Field != "metadata.name" && req.Field != "metadata.namespace" {
			return false
		}
	}
	return s.Matches(fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()})
}

// informerOf returns the informer that holds the objects of namespace, or
// nil if the view caches none of them.
func (v *view) informerOf(namespace string) *nsInformer {
	if v.namespaced == (namespace == "") {
		return nil
	}
	if v.byNamespace == nil {
		return v.informers[0]
	}
	return v.byNamespace[namespace]
}

// CaughtUp reports whether every informer that would hold the object has
// seen the write: its store has reached the write's resourceVersion, or
// holds the object at that version or a newer one; for a delete, no longer
// holds the object (or holds it marked for deletion, or another object of
// its name).
func (w written) CaughtUp() bool {
	for _, m := range w.marks {
		if !m.caughtUp() {
			return false
		}
	}
	return true
}

func (m mark) caughtUp() bool {
	inf := m.informer()
	if inf == nil {
		return true // the type was removed, or the slot given up
	}
	if !m.deleted {
		if have := inf.indexer.LastStoreSyncResourceVersion(); have != "" && atLeast(have, m.resourceVersion) {
			return true
		}
	}
	obj, ok, err := getByKey(inf.indexer, m.namespace, m.name)
	if err != nil || !ok {
		// Not held: deleted, or not yet created in the cache.
		return m.deleted
	}
	o, err := meta.Accessor(obj)
	if err != nil {
		return true // not an object: nothing to wait for
	}
	if m.deleted {
		return (m.uid != "" && o.GetUID() != m.uid) || o.GetDeletionTimestamp() != nil
	}
	return atLeast(o.GetResourceVersion(), m.resourceVersion)
}

// Wait blocks until CaughtUp or ctx ends, and returns ctx's error in that
// case. It wakes on every change of the informers' stores, and looks again
// at least every 50ms.
func (w written) Wait(ctx context.Context) error {
	var t *time.Timer
	for {
		ch := w.pending()
		if ch == nil {
			return nil
		}
		if t == nil {
			t = time.NewTimer(writtenPoll)
			defer t.Stop()
		} else {
			t.Reset(writtenPoll)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		case <-t.C:
		}
	}
}

// pending returns a channel closed at the next change of the store of the
// first informer that has not caught up, or nil if all have. The channel
// is taken before the store is looked at, so no change is missed.
func (w written) pending() <-chan struct{} {
	for _, m := range w.marks {
		if m.caughtUp() {
			continue
		}
		inf := m.informer()
		if inf == nil {
			continue
		}
		ch := inf.snapshots.changed()
		if !m.caughtUp() {
			return ch
		}
	}
	return nil
}

// informer returns the informer that holds the mark's object now: inf,
// unless the registration is sharded and its view has been swapped since
// the mark was made; nil if it no longer holds the object's slot.
func (m mark) informer() *nsInformer {
	if m.reg == nil || !m.reg.key.sharded {
		return m.inf
	}
	v := m.reg.view.Load()
	if v == nil {
		return nil
	}
	if slices.Contains(v.informers, m.inf) {
		return m.inf
	}
	if _, ok := slices.BinarySearch(v.held, m.slot); !ok {
		return nil
	}
	return v.informerOf(m.namespace)
}

// holdsSlotOf reports whether v, a view of r, holds obj's slot: true for a
// type not sharded.
func (v *view) holdsSlotOf(r *registration, obj metav1.Object) bool {
	if !r.key.sharded {
		return true
	}
	_, ok := slices.BinarySearch(v.held, r.slotOf(obj))
	return ok
}

// slotOf returns obj's slot in r, 0 when r is not sharded.
func (r *registration) slotOf(obj metav1.Object) int {
	if !r.key.sharded {
		return 0
	}
	return r.c.opts.Sharding.Slots.SlotOf(r.opts.ShardKey, obj)
}
