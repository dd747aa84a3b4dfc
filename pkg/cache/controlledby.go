package cache

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// controlledByIndex is the name of the built-in index that ControlledBy
// reads: it finds an object under the UID of its controller, the owner
// reference with controller: true.
//
// The values are UIDs, not names, because a UID names one object in the
// whole cluster: a lookup can never find the children of a same-named owner
// in another namespace, the trap of porting a by-owner-name index from
// controller-runtime (see "Differences" in the package documentation).
const controlledByIndex = "opkit.dev/controlled-by"

// indexControlledBy adds controlledByIndex to the type, before Start or
// after. It is idempotent: once the type has the index, from this Lister
// or from any other Lister of the same registration, it returns nil.
// manager.Owns calls it before Start (through cacheaccess), so that the
// initial list is indexed as it is stored.
func (l *Lister[T]) indexControlledBy() error {
	return l.reg.ensureIndex(controlledByIndex, controllerUID)
}

// ControlledBy returns the cached objects whose controller is owner, sorted
// by namespace, then name, without copying them (see Lister): the children
// a reconciler of owner manages. owner is the object itself, such as the
// one being reconciled; only its UID and namespace are read.
//
// A namespaced owner's children are looked up in its namespace only, as
// Kubernetes resolves a namespaced object's owner in the object's own
// namespace; a cluster-scoped owner's children are looked up in every
// cached namespace. Objects that list owner without controller: true are
// not its children here.
//
// The lookup is by an index of the owners' UIDs, which the first call adds
// to the type if manager.Owns did not (indexing what the type holds
// already, once). An owner without a UID, one not read from the API
// server, is an error.
func (l *Lister[T]) ControlledBy(owner metav1.Object) ([]T, error) {
	kind := l.reg.key.gvk.Kind
	uid := string(owner.GetUID())
	if uid == "" {
		return nil, fmt.Errorf("cache: list %s controlled by %s/%s: the owner has no UID: pass the object read from the API server or the cache", kind, owner.GetNamespace(), owner.GetName())
	}
	v, err := l.reg.readable()
	if err != nil {
		return nil, err
	}
	if !v.indexes[controlledByIndex] {
		if err := l.indexControlledBy(); err != nil {
			return nil, fmt.Errorf("cache: list %s controlled by %s/%s: %w", kind, owner.GetNamespace(), owner.GetName(), err)
		}
		if v, err = l.reg.readable(); err != nil {
			return nil, err
		}
	}
	ns := owner.GetNamespace()
	switch {
	case ns == "":
		return l.ByIndex(controlledByIndex, uid)
	case !v.namespaced:
		// A cluster-scoped object cannot have a namespaced owner.
		return []T{}, nil
	default:
		return l.ByIndexInNamespace(ns, controlledByIndex, uid)
	}
}

// controllerUID is the controlledByIndex function.
func controllerUID(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("index %q: %T has no object metadata", controlledByIndex, obj)
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil && ref.UID != "" {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// ensureIndex adds the index name with fn unless the type has one of that
// name, which it assumes is fn: only the cache's own indexes, whose names
// users cannot take, are added this way.
func (r *registration) ensureIndex(name string, fn toolscache.IndexFunc) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.indexers[name]; ok {
		return nil
	}
	return r.addIndexLocked(name, fn)
}
