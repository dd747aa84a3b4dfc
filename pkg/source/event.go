package source

import (
	"time"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// EventType tells what happened to an object.
type EventType uint8

// The informer events.
const (
	// Create is an object added to the informer: listed or created.
	Create EventType = iota + 1
	// Update is an object changed, or seen again by a resync.
	Update
	// Delete is an object removed from the informer.
	Delete
)

// String returns "create", "update" or "delete".
func (t EventType) String() string {
	switch t {
	case Create:
		return "create"
	case Update:
		return "update"
	case Delete:
		return "delete"
	default:
		return "unknown"
	}
}

// Event is one informer event, as predicates and handlers see it. Its
// objects are the informer's shared objects: nobody may modify them.
type Event[T cache.Object] struct {
	Type EventType
	// Object is the object: the new one of an update, the last state the
	// informer knew of a deleted one.
	Object T
	// Old is the object before an update; the zero T for other events.
	Old T
	// InInitialList marks a Create of an object in the informer's initial
	// list, rather than one created later.
	InInitialList bool
	// StateUnknown marks a Delete the informer inferred on a relist
	// (client-go's DeletedFinalStateUnknown tombstone): Object is the last
	// state it saw, which may be stale. A tombstone with no object, or
	// with one that is not a T, is dropped and reported through
	// k8s.io/apimachinery/pkg/util/runtime.HandleError.
	StateUnknown bool
	// Changed is when the change happened at the API server, estimated
	// from the object's timestamps as for opkit_cache_event_lag_seconds (whole
	// seconds); zero when unknown: for the initial list, resyncs, deletes
	// without a deletionTimestamp, and whenever the cache keeps no metrics.
	Changed time.Time

	changes bool // Enqueue adds keys with Changed (Lag.Changes)
}

// Resync reports whether e is an update in which the object did not change:
// the informer's periodic resync, or a relist that found the same
// resourceVersion.
func (e Event[T]) Resync() bool {
	return e.Type == Update && e.Old.GetResourceVersion() == e.Object.GetResourceVersion()
}

// Priority is the queue priority of e's keys: queue.LowPriority for the
// initial list and resyncs, which nobody waits on, and queue.NormalPriority
// for live events.
func (e Event[T]) Priority() int {
	if e.InInitialList || e.Resync() {
		return queue.LowPriority
	}
	return queue.NormalPriority
}
