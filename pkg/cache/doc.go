// Package cache is opkit's shared informer cache: one client-go
// SharedIndexInformer per cached type and scope, read through typed Listers
// that hand out the cached objects themselves.
//
// Its contract:
//
//   - Stripped on ingest: by default every object loses
//     metadata.managedFields and the
//     kubectl.kubernetes.io/last-applied-configuration annotation before it
//     is cached or handed to any handler. Together they are often half of
//     an object, and almost no reconciler reads them. A reconciler that
//     does must opt out per type with TypeOptions.KeepManagedFields or
//     TypeOptions.KeepLastApplied. Transforms of your own run after the
//     stripping. A copy of a cached object lacks what was stripped: write
//     it back through the manager's CachedClient (package pkg/cachedclient),
//     whose Update keeps the stripped fields on the API server, or with a
//     patch from the cached object. A plain update of the copy through
//     any other client deletes them there, and with the last-applied
//     annotation the merge base of the next kubectl apply.
//   - Compact: objects of one informer share what they have in common.
//     Equal label, annotation, node-selector and resource maps are one map,
//     and repeated strings (namespaces, label keys and values, images, owner
//     names) one string; the replicas of a workload repeat nearly all but
//     their names. Sharing cannot be seen by a reader that does not modify
//     what it reads, which no reader may.
//   - Zero-copy: Lister.Get, List and ByIndex return the cached objects, not
//     copies; Get allocates nothing. Callers must not modify what they get:
//     DeepCopy first. Tests run through testenv.Main have opkit's mutation
//     detector on (see "Finding who modified a cached object" below).
//   - Sorted: List, ByIndex and ByIndexInNamespace return objects sorted by
//     namespace, then name, the same order call after call. A List of a
//     namespace is remembered, sorted, until the store changes (a relist
//     included), so the order costs nothing on repeated reads.
//   - Explicit: a type is cached only once it is registered with Register (typed),
//     Metadata (metadata only) or Unstructured; reading anything else is an
//     error wrapping ErrNotRegistered, never a silently started informer.
//     A read through LookupKind (the cached client's) of a kind nobody
//     registered is logged once per kind, counted in
//     opkit_cache_unregistered_reads_total and, in tests, reported even when the
//     reader swallows the error (Options.UnregisteredReads,
//     TestUnregisteredReadsLoggedCountedReported).
//     Indexes are added before the type's informers start.
//   - Lazy for the many, full for the few read: Lazy[T] caches every
//     object of a kind as metadata only (stripped as above) and returns a
//     LazyLister whose Get fetches the full object from the API server
//     the first time it is read, then holds it, shared with every reader
//     (zero-copy, as Lister), until the metadata informer sees it change
//     or go: then it is dropped, not refreshed, since most objects read
//     once are not read again. Use it for a kind a controller must watch
//     (any object could matter) but reads in full rarely. The metadata
//     store decides existence (NotFound without a request); a Get checks
//     the held object's resourceVersion against it, so that it never
//     returns an object older than the metadata; concurrent Gets share one
//     fetch. The cost: one GET per object read after each change of it,
//     and the RBAC verb get on the kind besides list and watch (a 403
//     names it). Events, List, indexes and Cache.Written come from
//     LazyLister.Metadata. Fetches and objects held are counted in
//     opkit_cache_lazy_fetches_total and opkit_cache_lazy_objects (ExampleLazy,
//     TestLazyFetchesOnceAndShares, TestLazyDropsChangedAndDeleted,
//     TestLazyConcurrentGetsFetchOnce, TestLazyForbiddenGetNamesVerb,
//     TestLazyKeepsAFetchNewerThanTheMetadata, TestLazyHeapAfterSync).
//     The mutation detector watches fetched objects too
//     (TestLazyMutationIsReported).
//   - Owners built in: Lister.IndexControlledBy adds ControlledByIndex,
//     which finds objects under their controller's UID, and
//     Lister.ControlledBy lists an owner's children with it (manager.Owns
//     adds it for you). A UID names one object in the cluster, so the
//     children of same-named owners in other namespaces are never mixed in.
//   - One informer per type and scope: registering a type again with the
//     same namespaces, selectors and stripping shares its informers. A type
//     cached in several namespaces has one informer per namespace.
//   - Sharded on request: a type registered with TypeOptions.Sharded
//     caches only the objects of the slots (ShardingOptions.Slots, of
//     package sharding) last given to Cache.SetSlots, none before, by
//     TypeOptions.ShardKey. Where the API server applies shard selectors
//     (probed once with sharding.Supported, or ShardingOptions.ServerFilter)
//     each informer lists and watches only those slots; elsewhere it
//     receives everything and keeps only its slots' objects, so a Lister
//     shows the same either way. sharding.ByControllerOwner is always
//     filtered in the cache: the API server cannot select on an owner.
//     SetSlots makes new informers for the whole new slot set, waits for
//     them to sync while the old ones serve reads, then swaps them in one
//     step: reads see the old set or the new, never a gap, and every read
//     contract above (one store per namespace, zero-copy, sorted, indexes,
//     ControlledBy, Lazy, Written) holds unchanged. Handlers are handed an
//     add for each object of a gained slot and a delete for each object of
//     a lost one; objects held throughout are not handed on again unless
//     they changed. The cost of one informer set per slot set, rather than
//     one informer per run of slots gained together: each change lists the
//     replica's whole share again (rare: slots move when members join or
//     leave), in exchange for reads that never merge or deduplicate stores.
//     Written waits only for writes of held slots. opkit_cache_slots counts each
//     type's slots, TypeStatus.Slots lists them (ExampleCache_SetSlots,
//     TestShardedCachesPartition, TestShardedSelectorsSent,
//     TestShardedServerIgnoringSelectors, TestShardedByControllerOwner,
//     TestShardedMetadataAndLazy, TestShardedSlotsLifecycle,
//     TestShardedWrittenOfUnheldSlot, TestSetSlotsGivesUp,
//     TestHandlerAddedDuringSetSlots).
//   - Efficient on the wire: built-in types are decoded from protobuf,
//     custom resources from JSON; watches ask for bookmarks, and the initial
//     sync is one streaming list where the API server supports it (1.37
//     does).
//   - Patient with missing types: a type the API server does not serve yet
//     (its CRD is not installed) is reported as ErrNotInstalled, naming its
//     GroupVersionKind, looked up again every Options.CRDPollInterval
//     (2s), and synced once it appears, without a restart.
//   - Clear about failures: Status and WaitForSync name each type not synced
//     and why; a list or watch refused by RBAC names the verb, the resource
//     and the namespace to grant.
//   - Testable: Lister.WaitFor waits until the cache holds a write's
//     resourceVersion; NewStatic (through package cachetest) puts a real
//     Lister over objects in memory, for unit tests without an API server.
//   - Observable: with Options.Registerer, the objects cached
//     (opkit_cache_objects) and, for a sharded type, the slots held
//     (opkit_cache_slots), relists (opkit_cache_relists_total), watch restarts
//     (opkit_cache_watch_restarts_total), time to first sync (opkit_cache_first_sync_seconds), event
//     lag (opkit_cache_event_lag_seconds) and failed lists and watches by class
//     (opkit_cache_sync_errors_total) of each type, and no global registration. The lag
//     is estimated from each object's timestamps read before managedFields
//     are stripped (to the second, so up to 1s long), which the cache
//     remembers by object until the informer delivers it; handlers that
//     implement TimedEventHandler are handed that change time
//     (TestEventLag in pkg/controller). Sync errors are classified when a
//     list or a watch fails to open, and when a watch's stream fails
//     midway (a connection reset or cut: class connection)
//     (TestSyncErrorClasses in test/faults). An error the API server
//     sends inside a watch stream (a 410 on a long-open watch) or an
//     event that does not decode ends the watch without a count there:
//     client-go handles both inside its reflector, out of the cache's
//     sight; the watch restart (opkit_cache_watch_restarts_total) and, if reopening
//     fails, that failure are counted.
//
// # Differences from client-go and controller-runtime
//
// Users arrive with client-go's Indexer and controller-runtime's cached
// client in mind. Where opkit differs:
//
//   - Reads do not copy. controller-runtime's cached client deep-copies on
//     every Get and List by default; a Lister hands out the cached object
//     (TestTypedListerStripsAndShares, TestGetDoesNotAllocate).
//   - managedFields and the last-applied annotation are stripped by
//     default; both peers keep them unless told otherwise
//     (TestTypedListerStripsAndShares, TestKeepManagedFieldsAndLastApplied).
//   - Index lookups are not scoped to a namespace. controller-runtime
//     stores each field index value per namespace and scopes a List with
//     MatchingFields to the List's namespace; Lister.ByIndex, like
//     client-go's Indexer.ByIndex, searches every cached namespace. An index
//     ported as-is whose values are names (an owner's name, say) then finds
//     same-named objects' dependents in other namespaces too. Use
//     Lister.ByIndexInNamespace, which looks the namespace and value up
//     together, or put the namespace in the values (TestByIndexInNamespace).
//     For the most common such index, children by owner, use the built-in
//     Lister.ControlledBy, keyed by the owner's UID (TestControlledBy).
//   - Results are sorted by namespace, then name. client-go's and
//     controller-runtime's come in map order, which changes from call to
//     call (TestListAndByIndexAreSorted).
//   - Types are registered explicitly. controller-runtime starts an
//     informer for any type a Get or List asks for; reading a type no Register,
//     Metadata or Unstructured call registered returns ErrNotRegistered
//     (TestLookupOfUnregisteredType).
//   - A type whose CRD is missing does not fail Start: it is reported by
//     Status and WaitForSync as ErrNotInstalled and cached once the CRD
//     appears (TestCRDInstalledAfterStart).
//   - Modifying a cached object is reported by opkit's own mutation
//     detector, which names the object, the changed fields and the reader,
//     instead of client-go's detector panicking from an informer goroutine
//     (TestMutatingACachedObjectFailsTheTest).
//
// # Finding who modified a cached object
//
// With Options.Mutations.Detect, or OPKIT_CACHE_MUTATION_DETECTOR=true in
// the environment (testenv.Main sets it), the cache keeps a deep copy of
// each object as it enters the cache and compares every
// Options.Mutations.Interval (1s), on Cache.CheckMutations, and when a
// watch event replaces the object: a reader that modifies a cached object
// and writes it back is reported though its write replaces the object
// before the next check (TestModifiedThenWrittenIsReported). A modified
// object is reported once, as a *MutationError that names its kind,
// namespace/name and the changed fields (such as data.k), with a diff, to
// Options.Mutations.OnMutation: by default a panic with that message;
// testenv.ReportMutations fails the running test instead.
//
// To learn who modified it, run again with OPKIT_CACHE_MUTATION_TRACE=1 (or
// Options.Mutations.TraceReads): Lister reads then record, per object, the
// first caller outside the cache, and the report says "it was read at
// <file:line> by <function>". Tracing costs a stack walk per object read:
// a debugging mode, not for production. Under go test -race, the periodic
// comparison also makes the race detector report the modification, with
// the writer's stack.
package cache
