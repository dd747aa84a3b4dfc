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
	// ClusterScoped says that the owner kind is cluster-scoped, so that its
	// keys have an empty namespace. Defaults to false: the owner is in the
	// object's namespace, the only namespace a namespaced owner can be in.
	//
	// It is an option rather than a REST mapper lookup so that the handler
	// works before the owner's CRD is installed and costs no API call.
	ClusterScoped bool
}

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
	opts := queue.AddOpts{Priority: e.Priority()}
	refs := e.Object.GetOwnerReferences()
	ns := h.namespace(e.Object)
	if e.Type == Update && !e.Resync() {
		// An owner in both old and new is queued once, from new.
		oldRefs := e.Old.GetOwnerReferences()
		for i := range oldRefs {
			old := &oldRefs[i]
			if h.matches(old) && !h.holds(refs, old) {
				q.AddWithOpts(opts, reconcile.Request{Namespace: ns, Name: old.Name})
			}
		}
	}
	for i := range refs {
		if h.matches(&refs[i]) {
			q.AddWithOpts(opts, reconcile.Request{Namespace: ns, Name: refs[i].Name})
		}
	}
}

func (h *enqueueOwner[T]) namespace(obj T) string {
	if h.opts.ClusterScoped {
		return ""
	}
	return obj.GetNamespace()
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
