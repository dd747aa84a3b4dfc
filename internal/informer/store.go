package informer

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	clientgofeatures "k8s.io/client-go/features"
	toolscache "k8s.io/client-go/tools/cache"
)

// store is the informer's Indexer: client-go's thread-safe store
// (toolscache.NewIndexer with DeletionHandlingMetaNamespaceKeyFunc) in
// behaviour, in less memory per object. It holds objects by namespace,
// then name, the maps' keys being the objects' own strings, where
// client-go's makes a namespace/name string for each object; and the
// index toolscache.NamespaceIndex is that first level, where client-go's
// keeps one more set entry per object. Keys, where the Indexer interface
// takes or hands them out, are namespace/name as client-go's are.
//
// The index named toolscache.NamespaceIndex, if registered, is taken to
// be toolscache.MetaNamespaceIndexFunc, and its function is not called.
// Every other index function is called as client-go's store calls it: for
// the old and the new object of every change, under the store's lock.
//
// With a packer, the store holds metadata objects packed (see packedMeta),
// and every read of one (Get, List, an index, the old object of a change)
// is a new *metav1.PartialObjectMetadata, DeepEqual to the object stored.
type store struct {
	mu sync.RWMutex
	// byNS holds the objects, by namespace ("" for cluster-scoped ones),
	// then name, packed if packer is set. A namespace is in it if and
	// only if it holds objects.
	byNS     map[string]map[string]any
	packer   *packer // nil: objects are held as they are
	indexers toolscache.Indexers
	// indices hold, for each index but toolscache.NamespaceIndex, the
	// objects of each indexed value. A value is in it if and only if some
	// object has it.
	indices map[string]map[string]map[objKey]struct{}
	rv      string
}

var _ toolscache.Indexer = (*store)(nil)

// objKey names an object; its strings are the object's own.
type objKey struct{ namespace, name string }

func (k objKey) String() string {
	if k.namespace == "" {
		return k.name
	}
	return k.namespace + "/" + k.name
}

func newStore(indexers toolscache.Indexers) *store {
	if indexers == nil {
		indexers = toolscache.Indexers{}
	}
	return &store{byNS: map[string]map[string]any{}, indexers: maps.Clone(indexers), indices: map[string]map[string]map[objKey]struct{}{}}
}

// keyOf returns obj's key: a tombstone's or an explicit key's, split, or
// the object's namespace and name.
func keyOf(obj any) (objKey, error) {
	switch o := obj.(type) {
	case toolscache.DeletedFinalStateUnknown:
		return splitKey(o.Key), nil
	case toolscache.ExplicitKey:
		return splitKey(string(o)), nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return objKey{}, toolscache.KeyError{Obj: obj, Err: err}
	}
	return objKey{m.GetNamespace(), m.GetName()}, nil
}

func splitKey(key string) objKey {
	if ns, name, ok := strings.Cut(key, "/"); ok {
		return objKey{ns, name}
	}
	return objKey{name: key}
}

// resourceVersion returns obj's resource version, and false if obj is
// not an object (a tombstone).
func resourceVersion(obj any) (string, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	return m.GetResourceVersion(), true
}

func (s *store) Add(obj any) error { return s.Update(obj) }

func (s *store) Update(obj any) error {
	_, _, err := s.swap(obj)
	return err
}

// swap stores obj, as Update, and returns the object it replaced, if
// any: the informer hands it to handlers as the old object, unpacked
// once for them and the indexes.
func (s *store) swap(obj any) (old any, ok bool, err error) {
	k, err := keyOf(obj)
	if err != nil {
		return nil, false, err
	}
	stored := s.pack(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	old = s.getLocked(k)
	names := s.byNS[k.namespace]
	if names == nil {
		names = map[string]any{}
		s.byNS[k.namespace] = names
	}
	names[k.name] = stored
	s.updateIndices(old, obj, k)
	if rv, ok := resourceVersion(obj); ok {
		s.rv = rv
	}
	return old, old != nil, nil
}

// pack returns obj as the store holds it.
func (s *store) pack(obj any) any {
	if s.packer == nil {
		return obj
	}
	return s.packer.pack(obj)
}

// unpack returns the object k that v, as the store holds it, stands for.
func (s *store) unpack(k objKey, v any) any {
	if s.packer == nil || v == nil {
		return v
	}
	return s.packer.unpack(k.namespace, k.name, v)
}

func (s *store) Delete(obj any) error {
	k, err := keyOf(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.getLocked(k); old != nil {
		s.updateIndices(old, nil, k)
		names := s.byNS[k.namespace]
		delete(names, k.name)
		if len(names) == 0 {
			delete(s.byNS, k.namespace)
		}
	}
	if rv, ok := resourceVersion(obj); ok {
		s.rv = rv
	}
	return nil
}

// getLocked returns the object k, unpacked, or nil.
func (s *store) getLocked(k objKey) any { return s.unpack(k, s.byNS[k.namespace][k.name]) }

func (s *store) lenLocked() int {
	n := 0
	for _, names := range s.byNS {
		n += len(names)
	}
	return n
}

func (s *store) List() []any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	list := make([]any, 0, s.lenLocked())
	for ns, names := range s.byNS {
		for name, obj := range names {
			list = append(list, s.unpack(objKey{ns, name}, obj))
		}
	}
	return list
}

// ListSorted returns the objects of namespace (of every namespace when
// all), sorted by namespace, then name. It sorts each namespace's names
// before it unpacks, and unpacks outside the lock: for a packed store,
// faster than sorting what List returns.
func (s *store) ListSorted(namespace string, all bool) []any {
	type entry struct {
		name string
		v    any
	}
	s.mu.RLock()
	namespaces := []string{namespace}
	if all {
		namespaces = slices.Sorted(maps.Keys(s.byNS))
	}
	byNS := make([][]entry, len(namespaces))
	n := 0
	for i, ns := range namespaces {
		names := s.byNS[ns]
		byNS[i] = make([]entry, 0, len(names))
		for name, v := range names {
			byNS[i] = append(byNS[i], entry{name, v})
		}
		n += len(names)
	}
	s.mu.RUnlock()
	list := make([]any, 0, n)
	for i, entries := range byNS {
		slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
		for _, e := range entries {
			list = append(list, s.unpack(objKey{namespaces[i], e.name}, e.v)) // a packed value is never modified
		}
	}
	return list
}

func (s *store) ListKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := make([]string, 0, s.lenLocked())
	for ns, names := range s.byNS {
		for name := range names {
			keys = append(keys, objKey{ns, name}.String())
		}
	}
	return keys
}

func (s *store) Get(obj any) (any, bool, error) {
	k, err := keyOf(obj)
	if err != nil {
		return nil, false, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	v := s.byNS[k.namespace][k.name]
	if v == nil {
		return nil, false, nil
	}
	if _, packed := v.(*packedMeta); packed {
		k = splitKey(strings.Clone(k.namespace + "/" + k.name)) // as GetByKey's
	}
	return s.unpack(k, v), true, nil
}

func (s *store) GetByKey(key string) (any, bool, error) {
	k := splitKey(key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	v := s.byNS[k.namespace][k.name]
	if v == nil {
		return nil, false, nil
	}
	if _, packed := v.(*packedMeta); packed {
		// The object made takes its namespace and name from the key,
		// which may be the caller's reused buffer (the cache's
		// Lister.Get builds it in a pooled one): it gets its own.
		k = splitKey(strings.Clone(key))
	}
	return s.unpack(k, v), true, nil
}

func (s *store) Replace(list []any, resourceVersion string) error {
	keys := make([]objKey, len(list))
	sizes := map[string]int{}
	for i, obj := range list {
		k, err := keyOf(obj)
		if err != nil {
			return err
		}
		keys[i] = k
		sizes[k.namespace]++
	}
	// Each namespace's map made to its size: grown one object at a time,
	// it could end up with twice the room.
	byNS := make(map[string]map[string]any, len(sizes))
	for ns, n := range sizes {
		byNS[ns] = make(map[string]any, n)
	}
	stored := make([]any, len(list))
	for i, obj := range list {
		stored[i] = s.pack(obj)
		byNS[keys[i].namespace][keys[i].name] = stored[i]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byNS, s.rv = byNS, resourceVersion
	clear(s.indices)
	// Indexed as given, not unpacked again; of objects with the same
	// key, the last listed is the one held (objects are pointers: ==
	// compares identity).
	for i, obj := range list {
		if byNS[keys[i].namespace][keys[i].name] == stored[i] {
			s.updateIndices(nil, obj, keys[i])
		}
	}
	return nil
}

func (s *store) Resync() error { return nil }

// LastStoreSyncResourceVersion is as client-go's: empty unless the
// AtomicFIFO feature is on.
func (s *store) LastStoreSyncResourceVersion() string {
	if !clientgofeatures.FeatureGates().Enabled(clientgofeatures.AtomicFIFO) {
		return ""
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rv
}

func (s *store) Bookmark(rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv = rv
}

// GetIndexers returns a copy of the indexers, which AddIndexers may add
// to meanwhile.
func (s *store) GetIndexers() toolscache.Indexers {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.indexers)
}

func (s *store) AddIndexers(indexers toolscache.Indexers) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var conflicts []string
	for name := range indexers {
		if _, ok := s.indexers[name]; ok {
			conflicts = append(conflicts, name)
		}
	}
	if len(conflicts) > 0 {
		slices.Sort(conflicts)
		return fmt.Errorf("indexer conflict: %v", conflicts)
	}
	for name, f := range indexers {
		s.indexers[name] = f
	}
	for ns, names := range s.byNS {
		for name, obj := range names {
			k := objKey{ns, name}
			obj = s.unpack(k, obj)
			for index := range indexers {
				s.updateIndex(index, nil, obj, k)
			}
		}
	}
	return nil
}

func (s *store) Index(index string, obj any) ([]any, error) {
	f, err := s.indexFunc(index)
	if err != nil {
		return nil, err
	}
	values, err := f(obj)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	list := []any{}
	seen := map[objKey]struct{}{} // objects of several of values
	for _, v := range values {
		s.eachLocked(index, v, func(k objKey, obj any) {
			if _, ok := seen[k]; !ok {
				seen[k] = struct{}{}
				list = append(list, obj)
			}
		})
	}
	return list, nil
}

func (s *store) IndexKeys(index, value string) ([]string, error) {
	if _, err := s.indexFunc(index); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := []string{}
	s.eachLocked(index, value, func(k objKey, _ any) { keys = append(keys, k.String()) })
	slices.Sort(keys)
	return keys, nil
}

func (s *store) ListIndexFuncValues(index string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	values := []string{}
	if index == toolscache.NamespaceIndex && s.indexers[index] != nil {
		for ns := range s.byNS {
			values = append(values, ns)
		}
		return values
	}
	for v := range s.indices[index] {
		values = append(values, v)
	}
	return values
}

func (s *store) ByIndex(index, value string) ([]any, error) {
	if _, err := s.indexFunc(index); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	list := []any{}
	s.eachLocked(index, value, func(_ objKey, obj any) { list = append(list, obj) })
	return list, nil
}

func (s *store) indexFunc(index string) (toolscache.IndexFunc, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f := s.indexers[index]
	if f == nil {
		return nil, fmt.Errorf("Index with name %s does not exist", index)
	}
	return f, nil
}

// eachLocked calls f for each object whose values in index include value.
func (s *store) eachLocked(index, value string, f func(objKey, any)) {
	if index == toolscache.NamespaceIndex {
		for name, obj := range s.byNS[value] {
			k := objKey{value, name}
			f(k, s.unpack(k, obj))
		}
		return
	}
	for k := range s.indices[index][value] {
		f(k, s.getLocked(k))
	}
}

// updateIndices moves k from old's values to obj's in every index; old
// is nil for an add, obj for a delete. The caller holds mu.
func (s *store) updateIndices(old, obj any, k objKey) {
	for index := range s.indexers {
		s.updateIndex(index, old, obj, k)
	}
}

func (s *store) updateIndex(index string, old, obj any, k objKey) {
	if index == toolscache.NamespaceIndex {
		return
	}
	f := s.indexers[index]
	values := func(o any) []string {
		if o == nil {
			return nil
		}
		vs, err := f(o)
		if err != nil {
			panic(fmt.Errorf("unable to calculate an index entry for key %q on index %q: %v", k, index, err))
		}
		return vs
	}
	oldValues, newValues := values(old), values(obj)
	if len(oldValues) == 1 && len(newValues) == 1 && oldValues[0] == newValues[0] {
		return
	}
	idx := s.indices[index]
	for _, v := range oldValues {
		set := idx[v]
		delete(set, k)
		if len(set) == 0 {
			delete(idx, v)
		}
	}
	for _, v := range newValues {
		if idx == nil {
			idx = map[string]map[objKey]struct{}{}
			s.indices[index] = idx
		}
		set := idx[v]
		if set == nil {
			set = map[objKey]struct{}{}
			idx[v] = set
		}
		set[k] = struct{}{}
	}
}
