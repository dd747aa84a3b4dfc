// Package status writes an object's status subresource only when a reconcile
// changed it, computed against the cached object without modifying it.
//
// Its contract:
//
//   - The cached object stays as it is: Patch deep-copies it and hands the
//     copy to the caller's mutate function, so a reconciler can pass the
//     shared object a Lister returned.
//   - No request when nothing changed: the copy is compared with the cached
//     object with equality.Semantic.DeepEqual (nil and empty are equal,
//     times compare as instants); when equal, Patch sends nothing. Combined
//     with conditions.Set, which keeps a condition's lastTransitionTime
//     unless its status changes, a reconcile that finds nothing new writes
//     nothing.
//     The manager's writer (manager.Manager.Writer) skips an empty status
//     patch by itself, so through it Status().Patch with client.MergeFrom
//     from the cached object to a copy does the same; Patch does it with
//     any client.
//   - Only the fields that changed: the merge patch carries the fields in
//     which the copy differs from the cached object, so a status field the
//     reconcile did not touch, or that another writer owns, is left as the
//     API server has it. Unguarded by default, as controller-runtime's
//     Status().Patch with client.MergeFrom: a cache a little behind the
//     object (just after the reconcile's own finalizer or label write, say)
//     does not turn every status write into a Conflict and a retry. Set
//     observedGeneration (conditions.Set does) so that readers can tell a
//     status computed from an older spec.
//   - Guarded on request: WithOptimisticLock carries the cached object's
//     resourceVersion, so that a patch computed from an object that has
//     changed since, in any way, is refused with a Conflict
//     (apierrors.IsConflict) and the reconcile retries on fresh state.
//   - Status only: the patch goes to the status subresource, which ignores
//     everything else; mutate must change only the status (write the rest
//     with the client, or the finalizer package).
//   - Errors name the object and wrap the API error: apierrors.IsNotFound
//     tells a deleted object, IsConflict a stale cache.
//
// Patch lives in a package of its own, not in conditions, because a status is
// more than its conditions (the Mirror's counts its namespaces), and because
// conditions does no I/O and needs no client.
package status
