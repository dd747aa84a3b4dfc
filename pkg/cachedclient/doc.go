// Package cachedclient gives controller-runtime's client interfaces over
// opkit's cache, so that code written for controller-runtime, and helpers
// such as controllerutil.CreateOrUpdate, run on opkit unchanged; and the
// writer a controller writes with. Most code needs no import of it:
// manager.Manager.CachedClient and manager.Manager.Writer hand out what it
// makes (manager.Manager.UncachedClient stays uncached).
//
// # Reading
//
// NewReader makes a client.Reader over the cache; New joins it with a
// writing client:
//
//   - Copies: Get and List deep-copy each cached object into the caller's,
//     with its apiVersion and kind set; the caller owns what it gets.
//     UnsafeDisableDeepCopy is ignored.
//   - Three forms: a typed object reads the kind registered with
//     cache.Register, a *metav1.PartialObjectMetadata the one registered
//     with cache.Metadata, an *unstructured.Unstructured the one registered
//     with cache.Unstructured; lists likewise.
//   - Explicit: reading a kind not registered in that form is an error
//     wrapping cache.ErrNotRegistered that says how to register it; no
//     read starts an informer. It is logged and counted, and in tests
//     reported even if the reader swallows the error
//     (cache.UnregisteredReadOptions).
//   - Synced: before the cache starts, a read is controller-runtime's
//     ErrCacheNotStarted (of its pkg/cache); after, a read waits until
//     its kind has synced, as controller-runtime's does, so that an object
//     the informers have yet to list never reads as not found. A kind the
//     API server does not serve is an error wrapping cache.ErrNotInstalled
//     at once; a context that ends first, one wrapping cache.ErrNotSynced.
//   - Sorted: List returns items sorted by namespace, then name.
//   - List options: client.InNamespace, client.MatchingLabels and
//     client.MatchingLabelsSelector; a field selector only as one
//     index=value pair naming an index added with cache.Lister.AddIndex.
//     Other field selectors, client.Limit and client.Continue are errors
//     wrapping errors.ErrUnsupported.
//   - GetOptions are ignored; subresources are read and written through
//     the writing client, that is the API server.
//   - Write-backs keep what the cache strips: an Update of a copy read from
//     the cache is sent as a merge patch, so managedFields, the
//     last-applied annotation and whatever a Transform drops stay on the
//     API server; everything the caller changed is written, in one
//     request. To delete a stripped field, write through
//     manager.Manager.UncachedClient an object read from the API server:
//     its managedFields tell it from a cached copy (KeepStripped), whose
//     Update the UncachedClient sends as a merge patch too.
//
// Use cache.Lister in new code and on hot paths (no copy, no allocation);
// use the cached client to port controller-runtime code and call its
// helpers, at a deep copy per object read.
//
// # Writing
//
// NewWriter wraps a client for one controller; manager.Manager.Writer
// returns the manager's:
//
//   - Field owner: every create, update, patch and apply names
//     WriterOptions.FieldOwner as its field manager; a call's own
//     client.FieldOwner wins.
//   - Apply, and Status().Apply, force ownership
//     (client.ForceOwnership), as controllers should; pass
//     &client.ApplyOptions{Force: ptr.To(false)} to see conflicts. They
//     need no managedFields in the cache.
//   - Skipped applies: an apply of an object or of its status is not sent
//     when this writer's last apply of the same (object or status) sent
//     the same request and the cache holds the very object it returned
//     (same uid and resourceVersion).
//   - Skipped patches: an empty patch ({} or []), of the object or a
//     subresource, is not sent when the cache holds the object, so a
//     status patch from the cached object on every pass sends nothing when
//     nothing changed.
//   - A skipped write returns nil and fills its object from the cache, as
//     a sent one fills it from the response.
//   - Counted: opkit_client_writes_total{controller,verb,result} counts
//     applies and patches "sent" or "skipped", with
//     WriterOptions.Registerer.
//
// # Differences from controller-runtime's cached client
//
//   - Kinds are registered explicitly; a read of another kind is an error,
//     and in tests a report (Reader says why).
//   - A field index is named by the name given to cache.Lister.AddIndex,
//     not by a field path; one field pair per List.
//   - client.Limit is an error, not a first page with a fake continue
//     token that paging code would take as the end of the list.
//   - Lists are sorted; controller-runtime's come in map order.
//   - A List of a cluster-scoped kind with a namespace is an error
//     saying to list with none; controller-runtime's cached client
//     returns no object and its uncached client every object. A Get
//     with a namespace ignores it, as controller-runtime's does.
//   - Every read is a copy the caller owns, whatever UnsafeDisableDeepCopy
//     says.
//   - Update of a cached copy is a merge patch, so it keeps the fields the
//     cache strips, as controller-runtime's update of its unstripped copy
//     does.
//
// The package is not named client so that a file can import it beside
// controller-runtime's client without an alias.
package cachedclient
