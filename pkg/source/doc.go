// Package source turns events into keys on a queue.Queue: the events of
// informers (Kind for a type in pkg/cache, Informer for a client-go informer
// of your own), of a Go channel (Channel) and of a clock (Periodic). A
// Handler decides which keys an informer event queues (EnqueueObject,
// EnqueueOwner, EnqueueMapped) and Predicates decide which events reach it.
//
// Its contract:
//
//   - Non-blocking start: Start attaches a handler or starts one goroutine
//     and returns. A source starts once; a second Start is an error.
//     Everything it started stops when Start's context ends.
//   - Syncing: Kind and Informer implement Syncing: WaitForSync returns once
//     the informers' initial lists have reached the handler, or fails
//     naming the source. Every source is a fmt.Stringer naming itself.
//   - Late types: Kind may start before the cache, or before the type's CRD
//     is installed, and misses no event.
//   - Prioritised: initial lists and resyncs are queued at
//     queue.LowPriority, live changes at queue.NormalPriority (see
//     Event.Priority).
//   - Tombstones unwrapped: a delete the informer inferred reaches
//     predicates and handlers as a Delete of the last known object, with
//     Event.StateUnknown set.
//   - Both sides of an update: EnqueueOwner and EnqueueMapped queue the
//     keys of the old and the new object, so that a relation that ends is
//     reconciled on both sides.
//   - Read-only: handlers and predicates are handed the cache's shared
//     objects and never modify them; neither may yours.
//   - Never blocking the informer: an event costs a few operations and no
//     allocation beyond client-go's.
//   - Lag measured only where asked (WithLag); handlers of your own queue
//     with Enqueue to take part.
//   - Isolated failures: a panic in a handler, map function or predicate is
//     recovered, its event dropped (handled again at the object's next
//     change or resync) and reported (WithPanicObserver); it never ends the
//     informer, the process or another controller's flow.
//   - Owner scope from the API server: EnqueueOwner with OwnerOptions.Scope
//     decides per event whether the owner's key has a namespace, never
//     from a guess made before the owner's CRD was installed.
//   - Typed predicates, plain functions: a Predicate[T] keeps or drops a
//     whole Event[T] (Predicate says why); the change predicates let every
//     event but an update through; And, Or and Not compose them.
package source
