package source

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// OwnerOptions configure EnqueueOwner. The zero value is valid.
type OwnerOptions struct {
	// AllOwners queues every owner of the owner kind, not only the
	// controller (the owner reference with controller: true). Defaults to
	// false: the controller only, and only if it is of the owner kind.
	AllOwners bool
	// Scope says whether the owner kind is namespaced, and so whether an
	// owner's key carries the object's namespace or none. Defaults to nil:
	// namespaced, the owner in the object's namespace (the only namespace a
	// namespaced owner can be in).
	//
	// Pass the owner type's *cache.Lister, which knows the scope once the
	// API server serves the type (manager.Owns does), or ClusterScoped()
	// for a cluster-scoped kind. While the Scope answers with an error (the
	// owner's CRD is not installed yet), events queue no owner: no owner of
	// that kind exists to reconcile, and each one that appears later is
	// queued by its own create.
	Scope Scope
}

// Scope tells whether the objects of a kind live in namespaces.
// *cache.Lister implements it. Namespaced is called on the informer's
// delivery goroutine for each event with a matching owner reference: it
// must be cheap, must not block and must be safe for concurrent use.
type Scope interface {
	Namespaced() (bool, error)
}

// ClusterScoped returns the Scope of a kind known to be cluster-scoped,
// such as Namespace or ClusterRole.
func ClusterScoped() Scope { return clusterScoped{} }

type clusterScoped struct{}

func (clusterScoped) Namespaced() (bool, error) { return false, nil }

// EnqueueOwner returns the Handler that queues the owner of the object
// whose kind is owner (group and kind; owner references of any version
// match), as its ownerReferences name it. For an update it queues the
// owners of both the old and the new object, so an owner that lets go of
// the object is told too.
func EnqueueOwner[T cache.Object](owner schema.GroupKind, opts OwnerOptions) Handler[T, reconcile.Request] {
	return &enqueueOwner[T]{owner: owner, opts: opts}
}

type enqueueOwner[T cache.Object] struct {
	owner schema.GroupKind
	opts  OwnerOptions
}

var _ Handler[cache.Object, reconcile.Request] = (*enqueueOwner[cache.Object])(nil)

func (h *enqueueOwner[T]) Handle(e Event[T], q *queue.Queue[reconcile.Request]) {
	refs := e.Object.GetOwnerReferences()
	ns, known := "", false
	if e.Type == Update && !e.Resync() {
		// An owner in both old and new is queued once, from new.
		oldRefs := e.Old.GetOwnerReferences()
		for i := range oldRefs {
			old := &oldRefs[i]
			if h.matches(old) && !h.holds(refs, old) {
				if !known {
					if ns, known = h.namespace(e.Object); !known {
						return
					}
				}
				Enqueue(e, q, reconcile.Request{Namespace: ns, Name: old.Name})
			}
		}
	}
	for i := range refs {
		if h.matches(&refs[i]) {
			if !known {
				if ns, known = h.namespace(e.Object); !known {
					return
				}
			}
			Enqueue(e, q, reconcile.Request{Namespace: ns, Name: refs[i].Name})
		}
	}
}

// namespace returns the namespace of obj's owners, and false if the owner
// kind's scope is not known yet.
func (h *enqueueOwner[T]) namespace(obj T) (string, bool) {
	if h.opts.Scope == nil {
		return obj.GetNamespace(), true
	}
	namespaced, err := h.opts.Scope.Namespaced()
	switch {
	case err != nil:
		return "", false
	case namespaced:
		return obj.GetNamespace(), true
	default:
		return "", true
	}
}

// matches reports whether ref names an owner to queue.
func (h *enqueueOwner[T]) matches(ref *metav1.OwnerReference) bool {
	if !h.opts.AllOwners && (ref.Controller == nil || !*ref.Controller) {
		return false
	}
	if ref.Kind != h.owner.Kind {
		return false
	}
	// The group of apiVersion "apps/v1" is "apps"; of "v1", the core "".
	group, _, found := strings.Cut(ref.APIVersion, "/")
	if !found {
		group = ""
	}
	return group == h.owner.Group
}

// holds reports whether refs has a matching reference to the owner ref
// names.
func (h *enqueueOwner[T]) holds(refs []metav1.OwnerReference, ref *metav1.OwnerReference) bool {
	for i := range refs {
		if refs[i].Name == ref.Name && h.matches(&refs[i]) {
			return true
		}
	}
	return false
}
