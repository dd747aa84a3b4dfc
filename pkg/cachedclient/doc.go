// Package cachedclient gives controller-runtime's client interfaces over
// opkit's cache, so that code written for controller-runtime, and its
// helpers such as controllerutil.CreateOrUpdate and CreateOrPatch, run on
// opkit unchanged and never write into the cache; and the writer a
// controller writes with. Its name is not client's, so that a file can
// import it beside controller-runtime's client package without an alias.
// Most code needs neither import of it: manager.Manager.Writer and
// manager.Manager.CachedClient hand out what it makes.
//
// A Reader (NewReader) is a sigs.k8s.io/controller-runtime/pkg/client.Reader
// over a cache.Cache; New joins a reader and a writing client into one
// client.Client; manager.Manager.CachedClient returns the manager's cache
// and client joined so. manager.Manager.Client stays uncached: every read
// through it is a request to the API server.
//
// Its contract:
//
//   - Copies: Get and List deep-copy each cached object into the caller's,
//     with its apiVersion and kind set, as controller-runtime's cached
//     client does. The caller owns what it gets and may modify it.
//   - Three forms: a typed object (*corev1.ConfigMap) reads the kind
//     registered with cache.Register, a *metav1.PartialObjectMetadata the kind
//     its apiVersion and kind name registered with cache.Metadata, and an
//     *unstructured.Unstructured the one registered with
//     cache.Unstructured; lists likewise.
//   - Explicit: reading a kind not registered in that form is an error
//     wrapping cache.ErrNotRegistered that names the kind and how to
//     register it. No informer is started by a read. Such a read is
//     logged once per kind and form at V(0) and counted in
//     opkit_cache_unregistered_reads_total; in tests (testenv.Main sets
//     OPKIT_CACHE_FAIL_UNREGISTERED_READS) it is also reported, so that a
//     test fails even where the reader swallows the error
//     (cache.UnregisteredReadOptions, TestUnregisteredKind,
//     TestUnregisteredReadFailsTheSuite in pkg/webhook).
//   - Sorted: List returns items sorted by namespace, then name, as
//     cache.Lister does.
//   - List options: client.InNamespace, client.MatchingLabels and
//     client.MatchingLabelsSelector as controller-runtime's cached client
//     does; a field selector only as one index=value pair
//     (client.MatchingFields{"index": "value"}), where index is the name
//     given to cache.Lister.AddIndex: with a namespace it is
//     cache.Lister.ByIndexInNamespace, without one cache.Lister.ByIndex.
//     Other field selectors, client.Limit and client.Continue are errors
//     wrapping errors.ErrUnsupported. UnsafeDisableDeepCopy is ignored:
//     reads always copy.
//   - Write-backs keep what the cache strips: an Update of an object that
//     the cache holds at the object's own resourceVersion (a copy read
//     from it, modified) is sent as a JSON merge patch from the cached
//     copy to the object, conditional on that resourceVersion as the
//     update is. Fields the cache strips, and the copy therefore lacks,
//     are in neither and stay on the API server: managedFields, kubectl's
//     last-applied annotation, whatever a cache.TypeOptions.Transform
//     drops. Everything the caller changed or removed is written, in one
//     request (TestWriteBackKeepsWhatTheCacheStripped,
//     TestUpdateOfACachedCopyIsStillAnUpdate). Any other Update (no
//     resourceVersion, an object the cache does not hold or holds at
//     another version) is sent as an update. Patches from a read
//     (client.MergeFrom, controllerutil.CreateOrPatch) never carried the
//     stripped fields. To delete a stripped field, write through
//     manager.Manager.Client an object read from the API server.
//   - Get and List only: GetOptions (a resourceVersion, say) are ignored,
//     and subresources (client.SubResource, Status) are read and written
//     through the writing client, that is the API server.
//
// # Listers or the cached client
//
// Use cache.Lister in new code and on hot paths: it hands out the cached
// object itself, with no copy and no allocation, and the reader must not
// modify it. Use the cached client to port controller-runtime code and to
// call controller-runtime's helpers: each object read costs a deep copy,
// as on controller-runtime.
//
// # Why Update turns into a patch
//
// On controller-runtime, whose cache keeps every field, reading a copy,
// changing it and updating it keeps kubectl apply's merge base; a plain
// update of opkit's stripped copy would delete it, and the next kubectl
// apply would no longer prune what its manifest dropped. Keeping the
// annotation in the cache instead would store a second copy of every
// object kubectl's client-side apply created (the annotation is the whole
// applied object), and would not help fields a Transform drops. The patch
// costs a copy of the cached object and two JSON encodings per Update, and
// no extra request; admission sees an UPDATE either way.
//
// # Why reads never register
//
// controller-runtime's cached client starts an informer for any kind a
// read asks for. opkit refuses the read instead, and makes the refusal
// impossible to miss in tests, because registering on first read would
// list and watch every object of the kind, cluster-wide, from then on:
// memory nobody budgeted (a read of one Secret caches them all), RBAC
// (list and watch) the operator's manifests may not grant, so the read
// blocks until the sync times out, and a cache sync in the middle of a
// webhook call or reconcile. A manager cannot refuse to start instead:
// which kinds a reconciler or webhook reads is known only when it reads.
// What made a missing registration reach production was a test that
// passed with the error swallowed (a webhook that admits on any error);
// the report in tests closes that gap without changing what production
// reads.
//
// # Writing: apply and skipped writes
//
// NewWriter wraps a client.Client (usually the manager's CachedClient) for
// one controller; manager.Manager.Writer returns the one a controller of
// the manager needs, built from the manager's cached client, cache and
// registry:
//
//   - Field owner: every create, update, patch and apply names
//     WriterOptions.FieldOwner, which defaults to WriterOptions.Controller,
//     as its field manager (controller-runtime's client.WithFieldOwner does
//     the naming). A call's own client.FieldOwner wins.
//   - Apply: Apply takes the typed apply configurations of client-go
//     (k8s.io/client-go/applyconfigurations/...) or
//     client.ApplyConfigurationFromUnstructured, and forces ownership
//     (client.ForceOwnership), as the Kubernetes documentation advises for
//     controllers, which cannot resolve a conflict by hand. Pass
//     &client.ApplyOptions{Force: ptr.To(false)} to see conflicts instead
//     (TestApplyWithTheControllersFieldOwner,
//     TestApplyAfterAnotherWriterIsSent).
//   - Apply needs no managedFields in the cache: the API server computes
//     ownership from its own copy, so the cache's stripping of
//     managedFields (undone by cache.TypeOptions.KeepManagedFields) costs
//     apply nothing.
//   - Skipped applies: an apply is not sent when this writer's last apply
//     of the object sent the same request (body, field owner and force)
//     and the cache holds the very object that apply returned: the same
//     uid and resourceVersion. Server-side apply is idempotent, so sending
//     it again would change no field and no ownership. Anything else is
//     sent: a first apply (one per object after each start of the
//     process), a changed apply, an object someone else wrote since, an
//     object the cache does not hold or has not caught up with, a dry run,
//     and a body that carries a resourceVersion. Comparing field values
//     alone would not be certain: with managedFields stripped, the cache
//     cannot tell whether another manager's update has taken a field over,
//     whose value the next apply must take back (TestIdenticalApplyIsSkipped,
//     TestApplyAfterAnotherWriterIsSent, TestCacheMissIsWritten).
//   - Watch what you apply: an apply is skipped against the cache, so
//     when someone else's write has reached the server but not yet the
//     cache, the apply that would undo it waits for the informer to
//     deliver it; for an object the controller watches (Owns), that event
//     triggers the reconcile that sends it.
//   - Skipped patches: a merge or strategic merge patch whose data is {},
//     and a JSON patch whose data is [], are not sent when the cache holds
//     the object: such a patch changes nothing whatever the server holds.
//     So are such patches of the status and other subresources, so that
//     a reconcile may patch its status with client.MergeFrom from the
//     cached object to a copy, on every pass, and send nothing when the
//     status did not change (TestEmptyStatusPatchIsSkipped).
//     A patch of an object the cache does not hold is sent, so that it
//     fails there if the object is gone (TestEmptyMergePatchIsSkipped,
//     TestCacheMissIsWritten).
//   - A skipped write returns nil and fills its object from the cache, as
//     a sent one fills it from the response; managedFields stay empty if
//     the cache strips them.
//   - Counted: opkit_client_writes_total, opkit_client_writes_total{controller,verb,result},
//     counts applies and patches (of subresources too) "sent" or "skipped", when
//     WriterOptions.Registerer is set.
//   - Memory: the writer keeps one small entry (uid, resourceVersion and a
//     digest) per object it applied, dropped when it deletes the object.
//
// # Differences from controller-runtime's cached client
//
//   - Kinds are registered explicitly (cache.Register, cache.Metadata,
//     cache.Unstructured); controller-runtime starts an informer for any
//     kind a read asks for. A read of another kind is an error, and in
//     tests a report (see "Why reads never register";
//     TestUnregisteredKind).
//   - A field index is named by the name given to cache.Lister.AddIndex (any
//     name), not by the field path that controller-runtime's IndexField
//     takes; one field pair per List, not several (TestListByIndex).
//   - client.Limit is an error, not a first page with a fake continue
//     token that paging code would take as the end of the list
//     (TestListRefusesWhatTheCacheCannotAnswer).
//   - Lists are sorted; controller-runtime's come in map order
//     (TestListInEachForm).
//   - A Get of a cluster-scoped kind with a namespace is an error;
//     controller-runtime drops the namespace
//     (TestGetOfAClusterScopedKindWithANamespace).
//   - UnsafeDisableDeepCopy is ignored: every read is a copy the caller
//     owns (TestModifyingWhatWasReadLeavesTheCache).
//   - Update of a copy the cache holds is a merge patch (see above), so
//     it keeps the fields the cache strips, as controller-runtime's
//     update of its unstripped copy does.
package cachedclient
