// Package status writes an object's status subresource only when a reconcile
// changed it, computed against the cached object without modifying it.
//
// A status the controller owns whole is better applied (server-side apply
// of the generated apply configuration, with conditions.ForApply, through
// the manager's writer), as the scaffold does: no resourceVersion, no
// conflicts. Patch, a merge patch of what changed, is for code ported from
// controller-runtime as is, and for a status written piece by piece, where
// an apply of part of it would remove the rest
// (docs/porting-from-controller-runtime.md, "Which way to write").
//
// Its contract:
//
//   - The cached object stays as it is: Patch hands mutate a deep copy, so
//     a reconciler can pass the shared object a Lister returned.
//   - No request when nothing changed. With conditions.Set, which keeps a
//     condition's lastTransitionTime unless its status changes, a
//     reconcile that finds nothing new writes nothing. (The manager's
//     writer, manager.Manager.Writer, skips an empty status patch itself;
//     Patch does it with any client.)
//   - Only the fields that changed: a status field the reconcile did not
//     touch, or another writer owns, is left as the API server has it.
//     Unguarded by default; set observedGeneration (conditions.Set does)
//     so readers can tell a status computed from an older spec.
//   - Guarded on request: WithOptimisticLock refuses, with a Conflict, a
//     patch computed from an object that has changed since.
//   - Status only: mutate must change only the status; write the rest with
//     the client, or package finalizer.
//   - Errors name the object and wrap the API error: apierrors.IsNotFound
//     tells a deleted object, IsConflict a stale cache.
//
// Patch is not in package conditions because a status is more than its
// conditions, and conditions does no I/O and needs no client.
package status
