package cache

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
)

// versionIndex is the name of an index that indexes nothing: its function
// runs under the store's lock on every Add, Update and Delete, and counts
// them, so that a List can tell whether its last answer still holds.
const versionIndex = "opkit.dev/version"

// snapshots remember, per namespace, the objects the last List of the
// namespace found, sorted, and the store's version they were found at.
//
// A store's version is the count of changes seen by versionIndex together
// with the store's last resource version. The count alone misses a relist:
// with client-go's AtomicFIFO a relist is one Store.Replace, which runs
// index functions once per object it keeps, so a relist that keeps nothing
// runs none. Replace always sets the resource version of the list it
// replaces the store with, which is newer than any the store saw before.
type snapshots struct {
	// off, set before the informer runs, keeps none: every List reads
	// the store.
	off     bool
	changes atomic.Uint64
	// store is the informer's store, read for its resource version; set
	// before the informer runs.
	store toolscache.Store
	mu    sync.Mutex
	byNS  map[string]snapshot
	// waiting is set while someone waits on next, which the next change
	// closes (see changed).
	waiting atomic.Bool
	next    chan struct{}
}

// storeVersion identifies a state of the store: it changes on every change.
type storeVersion struct {
	changes         uint64
	resourceVersion string
}

type snapshot struct {
	version storeVersion
	items   any // []T of the registration's Lister type, sorted
}

func newSnapshots() *snapshots { return &snapshots{byNS: map[string]snapshot{}} }

// indexFunc is the versionIndex function.
func (s *snapshots) indexFunc(any) ([]string, error) {
	s.changes.Add(1)
	if s.waiting.Load() {
		s.wake()
	}
	return nil, nil
}

// changed returns a channel that the store's next change closes. The
// change closes it from its index functions, under the store's lock and
// before it is complete: a waiter woken then reads the store after the
// change, since its read takes the same lock.
func (s *snapshots) changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		s.next = make(chan struct{})
		s.waiting.Store(true)
	}
	return s.next
}

// wake closes the channel changed handed out. Called under the store's
// lock; s.mu is never held while the store's lock is taken.
func (s *snapshots) wake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next != nil {
		close(s.next)
		s.next = nil
		s.waiting.Store(false)
	}
}

func (s *snapshots) version() storeVersion {
	return storeVersion{s.changes.Load(), s.store.LastStoreSyncResourceVersion()}
}

// get returns the snapshot of namespace ns if the store has not changed
// since it was taken.
func (s *snapshots) get(ns string) (any, bool) {
	if s.off {
		return nil, false
	}
	v := s.version()
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, ok := s.byNS[ns]
	return snap.items, ok && snap.version == v
}

// put records items, read from the store after version was taken: the
// snapshot is at least as new as its version, so it is never served stale.
func (s *snapshots) put(ns string, version storeVersion, items any) {
	if s.off {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byNS[ns] = snapshot{version, items}
}

// listNamespace returns the objects of namespace ns in ix (of the whole
// store when wholeStore), sorted by namespace and name, through the
// snapshot when the store has not changed since the last call. The slice
// is shared: callers copy it before handing it out.
func listNamespace[T Object](s *snapshots, ix toolscache.Indexer, ns string, wholeStore bool) ([]T, error) {
	if items, ok := s.get(ns); ok {
		return items.([]T), nil
	}
	if sl, ok := ix.(sortedLister); ok && s.off {
		return filter[T](sl.ListSorted(ns, wholeStore), nil), nil
	}
	version := s.version()
	var items []any
	var err error
	if wholeStore {
		items = ix.List()
	} else if items, err = ix.ByIndex(toolscache.NamespaceIndex, ns); err != nil {
		return nil, err
	}
	typed := filter[T](items, nil)
	sortObjects(typed)
	s.put(ns, version, typed)
	return typed, nil
}

// sortedLister is implemented by the informers' stores, which sort by
// their keys faster than sortObjects sorts objects: worth it where every
// List sorts, as in a packed store, whose Lists are not remembered.
type sortedLister interface {
	// ListSorted returns the objects of namespace (of every namespace
	// when all), sorted by namespace, then name.
	ListSorted(namespace string, all bool) []any
}

// sortObjects sorts objs by namespace, then name: the order of every List
// and ByIndex, so that what a reconciler builds from them (a status field,
// say) does not change from one call to the next.
func sortObjects[T Object](objs []T) {
	slices.SortFunc(objs, func(a, b T) int {
		return cmp.Or(strings.Compare(a.GetNamespace(), b.GetNamespace()), strings.Compare(a.GetName(), b.GetName()))
	})
}
