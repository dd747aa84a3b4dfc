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
//   - Never on stale state: the merge patch carries the cached object's
//     resourceVersion (client.MergeFromWithOptimisticLock), so if the object
//     changed since it was cached, in its spec or its status, the API server
//     refuses it with a Conflict (apierrors.IsConflict) and the reconcile
//     retries on fresh state instead of overwriting a newer status with one
//     computed from an old spec.
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
