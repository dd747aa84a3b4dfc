package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// ErrConflictingShardSelector is wrapped by the list and watch errors of
// an informer with a shard selector when the options it is handed already
// carry a different one, or when the API server says it applied a
// different one.
var ErrConflictingShardSelector = errors.New("conflicting shard selector")

// SetShardSelector restricts the informer to the objects sel selects, as
// client-go v0.38's SharedIndexInformer.SetShardSelector does:
//
//   - Every list and watch carries sel.String() as ListOptions.ShardSelector.
//   - A list whose ListMeta has no ShardInfo was not filtered by the API
//     server (kube-apiserver without the ShardedListAndWatch gate ignores
//     the selector): the informer keeps the items sel.Matches and clears
//     RemainingItemCount. A list whose ShardInfo names another selector is
//     an error.
//   - Watch events other than bookmarks and errors are checked with
//     sel.Matches whether or not the server filtered them, and dropped if
//     they do not match.
//   - A nil or empty sel selects everything and changes nothing.
//
// Unlike client-go v0.38, a list type that cannot carry ShardInfo (in
// apimachinery v0.37, UnstructuredList) counts as not filtered by the
// server, rather than as an error. Before Run only: afterwards it returns
// an error and changes nothing. The last call wins.
func (i *Informer) SetShardSelector(sel apisharding.Selector) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		return errors.New("informer: set shard selector: the informer has started")
	}
	i.shard = sel
	return nil
}

// runListWatch is the ListerWatcher New gives the controller: it lists and
// watches through the informer's, with the shard selector set before Run.
type runListWatch struct{ i *Informer }

var (
	_ toolscache.ListerWatcher            = runListWatch{}
	_ toolscache.ListerWatcherWithContext = runListWatch{}
)

// List is ListWithContext without a context; the reflector calls
// ListWithContext.
func (r runListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), opts)
}

// Watch is WatchWithContext without a context; the reflector calls
// WatchWithContext.
func (r runListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), opts)
}

func (r runListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if first := r.i.takeFirstList(); first != nil {
		list, err := first(ctx, opts)
		if err == nil {
			return list, nil
		}
		logr.FromContextOrDiscard(ctx).V(1).Info("First list failed; listing in full", "error", err.Error())
	}
	return r.i.listWatch().ListWithContext(ctx, opts)
}

func (r runListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return r.i.listWatch().WatchWithContext(ctx, opts)
}

// IsWatchListSemanticsUnSupported is the informer's ListerWatcher's: a
// fake one that cannot stream lists keeps the reflector from trying. So
// does a first list (SetFirstList), which a stream would not ask for; the
// reflector reads this once, as it starts.
func (r runListWatch) IsWatchListSemanticsUnSupported() bool {
	return r.i.hasFirstList() || watchlist.DoesClientNotSupportWatchListSemantics(r.i.lw)
}

// listWatch returns the informer's ListerWatcher with its shard selector,
// made at the first list or watch, after which the selector is fixed.
func (i *Informer) listWatch() toolscache.ListerWatcherWithContext {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.sharded == nil {
		i.sharded = newShardedListWatch(i.lw, i.shard)
	}
	return i.sharded
}

// shardedListWatch is client-go v0.38's NewShardedListWatch, which
// client-go v0.37 lacks.
type shardedListWatch struct {
	lw       toolscache.ListerWatcherWithContext
	selector apisharding.Selector
	// fallback is done once the informer has logged that it filters.
	fallback sync.Once
}

// newShardedListWatch returns lw sending sel and filtering by it, or lw
// itself for a nil or empty sel.
func newShardedListWatch(lw toolscache.ListerWatcher, sel apisharding.Selector) toolscache.ListerWatcherWithContext {
	if sel == nil || sel.Empty() {
		return toolscache.ToListerWatcherWithContext(lw)
	}
	return &shardedListWatch{lw: toolscache.ToListerWatcherWithContext(lw), selector: sel}
}

// withSelector returns opts carrying the selector, or an error if they
// carry another.
func (s *shardedListWatch) withSelector(opts metav1.ListOptions) (metav1.ListOptions, error) {
	want := s.selector.String()
	if opts.ShardSelector != "" && opts.ShardSelector != want {
		return opts, fmt.Errorf("%w: options carry %q, the informer's is %q", ErrConflictingShardSelector, opts.ShardSelector, want)
	}
	opts.ShardSelector = want
	return opts, nil
}

func (s *shardedListWatch) logFallback(ctx context.Context) {
	s.fallback.Do(func() {
		logr.FromContextOrDiscard(ctx).V(1).Info("API server did not apply the shard selector; filtering in the informer", "selector", s.selector.String())
	})
}

func (s *shardedListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts, err := s.withSelector(opts)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	list, err := s.lw.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return nil, fmt.Errorf("list with shard selector: %w", err)
	}
	if sharded, ok := listMeta.(metav1.ShardedListInterface); ok {
		if info := sharded.GetShardInfo(); info != nil {
			if info.Selector != opts.ShardSelector {
				return nil, fmt.Errorf("list: %w: the API server applied %q, the informer's is %q", ErrConflictingShardSelector, info.Selector, opts.ShardSelector)
			}
			return list, nil
		}
	}
	s.logFallback(ctx)
	if err := s.filterList(list, listMeta); err != nil {
		return nil, fmt.Errorf("filter list by shard selector: %w", err)
	}
	return list, nil
}

// filterList keeps the items of list that the selector matches.
func (s *shardedListWatch) filterList(list runtime.Object, listMeta meta.List) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		ok, err := s.selector.Matches(item)
		if err != nil {
			return err
		}
		if ok {
			kept = append(kept, item)
		}
	}
	listMeta.SetRemainingItemCount(nil)
	return meta.SetList(list, kept)
}

func (s *shardedListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts, err := s.withSelector(opts)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	w, err := s.lw.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Type == watch.Bookmark || ev.Type == watch.Error {
			return ev, true
		}
		ok, err := s.selector.Matches(ev.Object)
		if err != nil {
			logr.FromContextOrDiscard(ctx).Error(err, "Cannot match a watch event against the shard selector; dropping it", "selector", s.selector.String())
			return ev, false
		}
		if !ok {
			s.logFallback(ctx)
		}
		return ev, ok
	}), nil
}
