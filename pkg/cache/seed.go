package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"

	"github.com/opkit-dev/opkit/internal/informer"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// errNoSeed is why a new view's informer lists in full after all.
var errNoSeed = errors.New("no seed")

// seedPageSize is how many objects each page of a gained slots' list
// asks for, as client-go's reflector pages its lists.
var seedPageSize int64 = 500

// seed has each informer of next, a view SetSlots is about to start in
// place of old, list from the API server only the objects of the slots
// old does not hold, and take the others from old's store: where old
// holds most of next's slots, as after a rebalance that moves a few, the
// API server lists a few slots' objects rather than the replica's whole
// share, and the objects held throughout are copied rather than decoded
// again.
//
// The informer's first list is then old's objects of the kept slots, as
// of the resource version rv old's store is the state of
// (informer.Snapshot), and the gained slots' objects listed at exactly
// rv: together, next's whole state at rv, which its informer watches
// from. Only where the API server filters by shard selector (a list of
// a few slots costs it a few slots' objects) and old's informer of the
// same namespace has synced; if anything fails (rv compacted away, say),
// the informer lists in full, as without a seed.
func (r *registration) seed(ctx context.Context, mapping *meta.RESTMapping, next, old *view) error {
	if old == nil || len(old.held) == 0 || len(next.held) == 0 || r.opts.ShardKey == sharding.ByControllerOwner ||
		!r.c.serverFilters(ctx, r, mapping) {
		return nil
	}
	gained, kept := split(next.held, old.held)
	if len(kept) == 0 {
		return nil
	}
	lwf, err := r.c.listWatchFactory(r.key, mapping)
	if err != nil {
		return err
	}
	slots, key := r.c.opts.Sharding.Slots, r.opts.ShardKey
	var selector string
	if len(gained) > 0 {
		if selector, err = slots.Selector(key, gained); err != nil {
			return fmt.Errorf("render shard selector: %w", err)
		}
	}
	for _, ni := range next.informers {
		from := old.informerFor(ni.namespace)
		if from == nil || from.idle || ni.idle {
			continue
		}
		inf, ok := ni.informer.(*informer.Informer)
		fromInf, fromOK := from.informer.(*informer.Informer)
		if !ok || !fromOK {
			continue
		}
		ns := ni.namespace
		lw := r.retirable(r.instrument(lwf(ns), ns), next.retired)
		first := func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			if next.retired.Load() {
				return nil, fmt.Errorf("%w: the type's CRD was deleted", errNoSeed)
			}
			objs, rv := fromInf.Snapshot()
			if rv == "" {
				return nil, fmt.Errorf("%w: the old informer cannot tell its resource version", errNoSeed)
			}
			var items []runtime.Object
			if selector != "" {
				// Exactly rv: the kept slots' objects are the state at
				// rv. Later pages are at the first one's version.
				opts := metav1.ListOptions{ShardSelector: selector, ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact}
				pages := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
					return lw.ListWithContext(ctx, opts)
				}))
				pages.PageSize = seedPageSize
				list, _, err := pages.List(ctx, opts)
				if err != nil {
					return nil, fmt.Errorf("list slots %v at resource version %s: %w", gained, rv, err)
				}
				if items, err = meta.ExtractList(list); err != nil {
					return nil, err
				}
			}
			// Of each source, the objects of its slots only: the list's,
			// in case the API server did not filter it after all.
			items = slices.DeleteFunc(items, func(o runtime.Object) bool { return !inSlots(slots, key, o, gained) })
			for _, obj := range objs {
				if o, ok := obj.(runtime.Object); ok && inSlots(slots, key, o, kept) {
					// A copy: the new informer's transform shares what
					// it can in place, and old's readers read these.
					items = append(items, o.DeepCopyObject())
				}
			}
			// A list as client-go's pager makes of several pages, which
			// its reflector takes as it takes any.
			return &metainternalversion.List{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: items}, nil
		}
		if err := inf.SetFirstList(first); err != nil {
			return err
		}
	}
	return nil
}

// split returns the slots of next that old does not hold, and those it
// does; both sorted, as next and old are.
func split(next, old []int) (gained, kept []int) {
	for _, s := range next {
		if _, ok := slices.BinarySearch(old, s); ok {
			kept = append(kept, s)
		} else {
			gained = append(gained, s)
		}
	}
	return gained, kept
}

// inSlots reports whether obj is of one of slots, which are sorted.
func inSlots(s sharding.Slots, key sharding.Key, obj runtime.Object, slots []int) bool {
	o, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	_, ok := slices.BinarySearch(slots, s.SlotOf(key, o))
	return ok
}

// informerFor returns v's informer made for namespace ns ("" for every
// namespace), or nil.
func (v *view) informerFor(ns string) *nsInformer {
	for _, i := range v.informers {
		if i.namespace == ns {
			return i
		}
	}
	return nil
}
