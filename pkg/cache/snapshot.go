package cache

import (
	"sync"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
)

// versionIndex is the name of an index that indexes nothing: its function
// runs under the store's lock on every change to the store, and counts the
// changes, so that a List can tell whether its last answer still holds.
const versionIndex = "opkit.dev/version"

// snapshots remember, per namespace, the objects the last List of the
// namespace found, and the store's version they were found at.
type snapshots struct {
	version atomic.Uint64
	mu      sync.Mutex
	byNS    map[string]snapshot
}

type snapshot struct {
	version uint64
	items   any // []T of the registration's Lister type
}

func newSnapshots() *snapshots { return &snapshots{byNS: map[string]snapshot{}} }

// indexFunc is the versionIndex function.
func (s *snapshots) indexFunc(any) ([]string, error) {
	s.version.Add(1)
	return nil, nil
}

// get returns the snapshot of namespace ns if the store has not changed
// since it was taken.
func (s *snapshots) get(ns string) (any, bool) {
	v := s.version.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, ok := s.byNS[ns]
	return snap.items, ok && snap.version == v
}

// put records items, read from the store after version was loaded: the
// snapshot is at least as new as its version, so it is never served stale.
func (s *snapshots) put(ns string, version uint64, items any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byNS[ns] = snapshot{version, items}
}

// listNamespace returns the objects of namespace ns in ix, through the
// snapshot when the store has not changed since the last call.
func listNamespace[T Object](s *snapshots, ix toolscache.Indexer, ns string, wholeStore bool) ([]T, error) {
	if items, ok := s.get(ns); ok {
		return items.([]T), nil
	}
	version := s.version.Load()
	var items []any
	var err error
	if wholeStore {
		items = ix.List()
	} else if items, err = ix.ByIndex(toolscache.NamespaceIndex, ns); err != nil {
		return nil, err
	}
	typed := filter[T](items, nil)
	s.put(ns, version, typed)
	return typed, nil
}
