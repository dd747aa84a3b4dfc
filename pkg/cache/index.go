package cache

import (
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// addLiveIndex adds an index to r's running informers, which index what
// they hold already, and publishes a copy of the view that has it: views
// are read without a lock, so they never change. A registration whose
// slots SetSlots is changing refuses, since the view being made reads the
// indexers without r.mu. The caller holds r.mu.
func (r *registration) addLiveIndex(name string, fn toolscache.IndexFunc) error {
	v := r.view.Load()
	switch {
	case r.removed:
		return fmt.Errorf("cache: add index %q to %s: %w", name, r.key.gvk, ErrRemoved)
	case v == nil || r.slotting > 0 || r.next != nil:
		return fmt.Errorf("cache: add index %q to %s: its informers are being replaced; add indexes before Start, or again once SetSlots has returned", name, r.key.gvk)
	}
	for _, i := range v.informers {
		add := toolscache.Indexers{name: fn}
		if i.namespace == "" && v.namespaced {
			addNamespacedIndexes(add, toolscache.Indexers{name: fn})
		}
		if err := i.informer.AddIndexers(add); err != nil {
			return fmt.Errorf("cache: add index %q to %s: %w", name, r.key.gvk, err)
		}
	}
	r.indexers[name] = fn
	next := *v
	next.indexes = maps.Clone(v.indexes)
	next.indexes[name] = true
	r.view.Store(&next)
	return nil
}

// namespacedIndex names the companion of index that an informer of every
// namespace keeps, so that ByIndexInNamespace finds a namespace's objects
// by one lookup. It costs a second entry per indexed value; an informer of
// one namespace needs no companion.
func namespacedIndex(index string) string { return "opkit.dev/in-namespace/" + index }

func namespacedValue(namespace, value string) string { return namespace + "/" + value }

// addNamespacedIndexes adds to indexers the namespaced companion of every
// index in user.
func addNamespacedIndexes(indexers, user toolscache.Indexers) {
	for name, fn := range user {
		if name == toolscache.NamespaceIndex {
			continue
		}
		indexers[namespacedIndex(name)] = inNamespace(fn)
	}
}

// inNamespace returns an index function that prefixes each value of fn with
// the object's namespace.
func inNamespace(fn toolscache.IndexFunc) toolscache.IndexFunc {
	return func(obj any) ([]string, error) {
		values, err := fn(obj)
		if err != nil || len(values) == 0 {
			return nil, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		out := make([]string, len(values))
		for i, v := range values {
			out[i] = namespacedValue(m.GetNamespace(), v)
		}
		return out, nil
	}
}
