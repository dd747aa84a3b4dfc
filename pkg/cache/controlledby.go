package cache

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// ControlledByIndex is the name of the built-in index that
// IndexControlledBy adds: it finds an object under the UID of its
// controller, the owner reference with controller: true. ByIndex and
// ByIndexInNamespace accept it like an index of your own.
//
// The values are UIDs, not names, because a UID names one object in the
// whole cluster: a lookup can never find the children of a same-named owner
// in another namespace, the trap of porting a by-owner-name index from
// controller-runtime (see "Differences" in the package documentation).
const ControlledByIndex = "opkit.dev/controlled-by"

// ErrNoControlledByIndex is wrapped by the error of ControlledBy on a type
// whose ControlledByIndex was never added.
var ErrNoControlledByIndex = errors.New("no controlled-by index")

// IndexControlledBy adds ControlledByIndex to the type, so that
// ControlledBy can list an owner's children. manager.Owns calls it for
// every type it watches.
//
// It is idempotent: once the type has the index, from this Lister or from
// any other Lister of the same registration, it returns nil, before Start
// or after. Adding it for the first time after the type's informers have
// started returns an error.
func (l *Lister[T]) IndexControlledBy() error {
	return l.reg.ensureIndex(ControlledByIndex, controllerUID)
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
// The type needs ControlledByIndex (IndexControlledBy, or manager.Owns):
// otherwise the error wraps ErrNoControlledByIndex. An owner without a UID,
// one not read from the API server, is an error.
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
	if !v.indexes[ControlledByIndex] {
		return nil, fmt.Errorf("cache: list %s controlled by %s/%s: %w: call IndexControlledBy on its Lister before Start, or watch it with manager.Owns", kind, owner.GetNamespace(), owner.GetName(), ErrNoControlledByIndex)
	}
	ns := owner.GetNamespace()
	switch {
	case ns == "":
		return l.ByIndex(ControlledByIndex, uid)
	case !v.namespaced:
		// A cluster-scoped object cannot have a namespaced owner.
		return []T{}, nil
	default:
		return l.ByIndexInNamespace(ns, ControlledByIndex, uid)
	}
}

// controllerUID is the ControlledByIndex function.
func controllerUID(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("index %q: %T has no object metadata", ControlledByIndex, obj)
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
