// Package finalizer adds and removes one finalizer of an object with a JSON
// patch, and runs a cleanup before letting a deleted object go.
//
// Its contract:
//
//   - Never mutates what it is given, so it is safe on a Lister's cached
//     objects.
//   - No request when there is nothing to do: Ensure sends nothing when the
//     object already holds the finalizer, Remove when it does not.
//   - Only the finalizer is written, guarded by JSON patch "test"
//     operations: a concurrent change of the finalizers (or a deletion,
//     for Ensure) is a Conflict (apierrors.IsConflict), to retry on fresher
//     state; an unrelated change, such as a status or label update, is not.
//   - Names are checked before any request: Ensure and Finalize require a
//     domain-qualified name such as samples.opkit.dev/cleanup; Remove
//     accepts any qualified name, so that an operator can drop a legacy
//     unprefixed finalizer. A bad name is an error wrapping ErrInvalidName.
//   - Finalize is the whole protocol for a reconciler: it ensures the
//     finalizer on a live object, and on an object being deleted runs the
//     cleanup, then removes the finalizer, and reports deleting so the
//     reconciler stops there. Cleanup runs again until it succeeds, so it
//     must be idempotent.
//   - A controller built by manager.NewController need not call it:
//     manager.Finalizer runs Finalize before each reconcile. Call Finalize
//     yourself elsewhere, or when cleanup must come at another point of
//     the reconcile.
//
// controller-runtime's controllerutil.AddFinalizer and RemoveFinalizer modify
// the object in memory and leave the write to an Update or Patch of the whole
// object; on a zero-copy Lister object that modifies the cache.
package finalizer
