package cache

import (
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

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
