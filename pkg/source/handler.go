package source

import (
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// Handler turns an event into keys on a queue.
//
// Handle is called on the informer's delivery goroutine, one event at a
// time per informer, right after the cache stores the event: it must not
// block, for while it runs the informer's store and its other handlers
// wait, and it must not modify e's objects,
// which the cache shares with every reader. It should add keys at
// e.Priority(); queue.Queue's adds never block.
type Handler[T cache.Object, K comparable] interface {
	Handle(e Event[T], q *queue.Queue[K])
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc[T cache.Object, K comparable] func(e Event[T], q *queue.Queue[K])

var _ Handler[cache.Object, reconcile.Request] = HandlerFunc[cache.Object, reconcile.Request](nil)

// Handle calls f.
func (f HandlerFunc[T, K]) Handle(e Event[T], q *queue.Queue[K]) { f(e, q) }

// EnqueueObject returns the Handler that queues the object's own namespace
// and name, the usual handler of a controller's primary type.
func EnqueueObject[T cache.Object]() Handler[T, reconcile.Request] {
	return enqueueObject[T]{}
}

type enqueueObject[T cache.Object] struct{}

var _ Handler[cache.Object, reconcile.Request] = enqueueObject[cache.Object]{}

func (enqueueObject[T]) Handle(e Event[T], q *queue.Queue[reconcile.Request]) {
	// An update never changes an object's namespace and name, so the new
	// object's key is the old one's too.
	key := reconcile.Request{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}
	Enqueue(e, q, key)
}

// EnqueueMapped returns the Handler that queues the keys fn returns for the
// object, for relations that owner references do not express: across
// namespaces, by label, by a field index. For an update it queues the keys
// of both the old and the new object, so that a relation that ends is seen
// by both sides.
//
// fn runs on the informer's delivery goroutine: it must be quick, read only
// from caches, and not modify the object.
func EnqueueMapped[T cache.Object, K comparable](fn func(obj T) []K) Handler[T, K] {
	return enqueueMapped[T, K](fn)
}

type enqueueMapped[T cache.Object, K comparable] func(obj T) []K

var _ Handler[cache.Object, int] = enqueueMapped[cache.Object, int](nil)

func (fn enqueueMapped[T, K]) Handle(e Event[T], q *queue.Queue[K]) {
	if e.Type == Update && !e.Resync() {
		Enqueue(e, q, fn(e.Old)...)
	}
	Enqueue(e, q, fn(e.Object)...)
}
