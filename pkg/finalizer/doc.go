// Package finalizer adds and removes one finalizer of an object with a JSON
// patch, and runs a cleanup before letting a deleted object go.
//
// Its contract:
//
//   - Never mutates what it is given: the object a reconciler holds is
//     usually the shared one from a cache Lister. The functions read it and
//     write through a private copy, so they are safe on cached objects.
//   - No request when there is nothing to do: Ensure sends nothing when the
//     object already holds the finalizer, Remove when it does not.
//   - Only the finalizer is written, never the whole object: Ensure appends
//     one entry, Remove deletes its entries by index. Each patch carries JSON
//     patch "test" operations that guard exactly what it relies on, so it
//     neither overwrites a concurrent change unseen nor fails on an
//     unrelated one (a status or label update does not conflict):
//     Ensure tests the whole finalizers list and that the object is not
//     being deleted; Remove tests the value at the index it removes.
//   - A failed guard is a conflict: the API server answers a failed "test"
//     with a bare 422 Unprocessable Entity; Ensure and Remove return it as
//     a 409 Conflict (apierrors.IsConflict reports true), as an optimistic-lock
//     failure of an update would be, so the reconcile retries on fresher
//     state. This differs from a merge patch with an optimistic lock on
//     resourceVersion (controller-runtime's idiom), which conflicts on any
//     change of the object.
//   - Names are checked before any request: Ensure and Finalize require a
//     domain-qualified name such as samples.opkit.dev/cleanup (the API server
//     refuses others on built-in types and warns about them on custom
//     resources: they collide between controllers); Remove accepts any
//     qualified name, so that an operator can drop a legacy unprefixed
//     finalizer from its custom resources. A bad name is an error wrapping
//     ErrInvalidName.
//   - Finalize is the whole protocol for a reconciler: it ensures the
//     finalizer on a live object; on an object being deleted it runs the
//     cleanup and then removes the finalizer, and it reports "deleting" so
//     that the reconciler stops there ("deleting" rather than "done": it
//     tells the reconciler what state the object is in, whatever Finalize
//     managed to do). Cleanup runs again on the next reconcile until it
//     succeeds, so it must be idempotent.
//   - A controller built by manager.NewController need not call it:
//     manager.Finalizer runs Finalize before each reconcile, hands cleanup
//     the object being deleted, and the reconciler only objects that are
//     not. Call Finalize yourself in a reconciler run otherwise, or one
//     whose cleanup must come at another point of the reconcile.
//
// controller-runtime's controllerutil.AddFinalizer and RemoveFinalizer modify
// the object in memory and leave the write to an Update or Patch of the whole
// object; on a zero-copy Lister object that modifies the cache.
package finalizer
