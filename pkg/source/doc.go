// Package source turns events into keys on a queue.Queue: the events of
// informers (Kind for a type in pkg/cache, Informer for a client-go informer
// of your own), of a Go channel (Channel) and of a clock (Periodic). A
// Handler decides which keys an informer event queues (EnqueueObject,
// EnqueueOwner, EnqueueMapped) and Predicates decide which events reach it.
//
// Its contract:
//
//   - Non-blocking start: Start attaches a handler or starts one goroutine
//     and returns; it never waits for an event. A source may be started
//     once; a second Start is an error. Everything a source started stops
//     when the context passed to Start ends: informer handlers are
//     detached, goroutines return.
//   - Syncing: Kind and Informer implement Syncing. WaitForSync returns once
//     every object of the informers' initial lists has been handed to the
//     handler, or fails with an error that names the source and wraps
//     context.Cause(ctx). Every source implements fmt.Stringer, naming its
//     Go type (and, for Kind, its group, version and kind).
//   - Late types: Kind attaches through cache.Lister.AddEventHandler, so it
//     may start before the cache or before the type's CRD is installed, and
//     misses no event.
//   - Prioritised: a handler queues at Event.Priority: objects of the
//     initial list and resync updates (the resourceVersion did not change)
//     at queue.LowPriority, which nobody waits on; live creates, updates and
//     deletes at queue.NormalPriority. Channel keys go in at
//     NormalPriority, Periodic keys at PeriodicOptions.Priority.
//   - Tombstones unwrapped: a delete the informer inferred
//     (toolscache.DeletedFinalStateUnknown) reaches predicates and handlers
//     as a Delete of the last known object, with Event.StateUnknown set.
//     One with no object, or any object that is not a T, is dropped and
//     reported through k8s.io/apimachinery/pkg/util/runtime.HandleError.
//   - Both sides of an update: EnqueueOwner and EnqueueMapped queue the
//     keys of the old and the new object, so that a relation that ends is
//     reconciled on both sides.
//   - Read-only: handlers and predicates are handed the cache's shared
//     objects and never modify them; neither may yours. Tests run with
//     client-go's mutation detector on.
//   - Cheap and never blocking: on the informer's delivery goroutine an
//     event costs one type assertion, the predicates, one key built from
//     the object's namespace and name and one queue add, which never blocks
//     and allocates nothing; the source allocates nothing per event beyond
//     what client-go does. BenchmarkInformerUpdates measures it against
//     controller-runtime's source, handler and priority queue.
//   - Lag measured where asked: under WithLag (a controller with metrics
//     starts its sources so), an informer source times each event from
//     delivery to its handler's return, and records each key's change
//     time (Event.Changed, which pkg/cache provides with its metrics on)
//     in a ChangeTimes, the earliest per key until a worker takes it.
//     Handlers of your own queue with Enqueue to take part. Without
//     WithLag, nothing is timed or recorded.
//   - Isolated failures: a panic in a handler, a map function or a
//     predicate is recovered on the goroutine that delivered the event, so
//     it never ends the informer's delivery goroutine, the process, or
//     any other controller's flow. The event that panicked is dropped (the
//     object is handled again at its next change or resync) and the panic
//     is reported, with the object's key and the stack, to the observer set
//     by WithPanicObserver: a controller logs it under its name and counts
//     it in opkit_controller_handler_panics_total{controller,type}.
//     Without an observer it is logged through the logger of Start's
//     context, or else client-go's HandleError.
//   - Owner scope from the API server: EnqueueOwner with
//     OwnerOptions.Scope set to the owner type's *cache.Lister decides per
//     event whether the owner's key has a namespace, from the scope the
//     cache learned once the API server served the type, never from a
//     guess made before its CRD was installed.
//   - Typed predicates, plain functions: a Predicate[T] keeps or drops a
//     whole Event[T] (see Predicate for why), and the change predicates
//     are generic functions whose T the call that takes them infers; they
//     let every event but an update through; And, Or and Not compose them.
package source
