// Package cache is opkit's shared informer cache: one informer per cached
// type and scope, read through typed Listers that hand out the cached
// objects themselves. The informers are client-go SharedIndexInformers in
// every method and fill their stores with client-go's
// reflector and queue; they differ in delivery: a pkg/source handler is
// called on the informer's own goroutine right after each event is
// stored, where client-go hands every event to every handler through a
// buffer and two goroutines of the handler's own. Other handlers get
// those, as with client-go.
//
// Its contract:
//
//   - Zero-copy: Lister.Get, List and ByIndex return the cached objects, not
//     copies; Get allocates nothing. Callers must not modify what they get:
//     DeepCopy first. Listers are safe for concurrent use. Metadata-only
//     Listers (Metadata, Lazy's) read packed objects: each read returns a
//     new PartialObjectMetadata, equal to the one cached and sharing its
//     maps and slices, so must not be modified either.
//   - Kinds set: every object a Lister returns or a handler is handed
//     carries its apiVersion and kind, as controller-runtime's cached
//     client's objects do. client-go decodes typed objects without them;
//     the cache sets them on ingest, to two strings the objects of an
//     informer share, at no cost in memory.
//   - Stripped on ingest: by default every object loses
//     metadata.managedFields and the last-applied-configuration annotation
//     (TypeOptions.KeepManagedFields and TypeOptions.KeepLastApplied opt
//     out). Write a copy back through the manager's Writer or CachedClient
//     (package pkg/cachedclient) or with a patch: a plain update through
//     any other client deletes what was stripped on the API server.
//   - Compact: objects of one informer share equal maps, owner references
//     and strings, which no reader can see, since no reader modifies what
//     it reads; the store keys objects by their own namespace and name
//     strings, and packs metadata-only objects (uid as 16 bytes,
//     resourceVersion as a number, rare fields behind one pointer).
//     BenchmarkBytesPerObject measures the bytes per object each kind of
//     cache takes against the bytes a controller can read;
//     BenchmarkMetadataRead what a packed read costs.
//   - Sorted: List, ByIndex and ByIndexInNamespace return objects sorted by
//     namespace, then name, the same order call after call.
//   - One way to each Lister: Register (the Go type), Metadata
//     (metadata only) and Unstructured return a Lister, Lazy a LazyLister;
//     package cachetest builds a Lister over objects in memory for tests.
//     What opkit's own packages ask of a cache beyond this API they reach
//     through internal/cacheaccess, which other modules cannot import.
//   - Explicit: a type is cached only once registered (Register, Metadata,
//     Unstructured or Lazy); reading any other is an error wrapping
//     ErrNotRegistered, never a silently started informer, and is logged
//     and counted (Options.UnregisteredReads). Indexes may be added to a
//     running type: they cover what it holds already.
//   - One informer per type and scope: registering a type again with the
//     same namespaces, selectors and stripping shares its informers; a
//     type cached in several namespaces has one informer per namespace.
//   - Held by owners: a type registered with TypeOptions.Owner is cached
//     while some owner's Lister holds it. Lister.Release drops one hold;
//     the last stops the informers and frees what they cached, unless a
//     registration without an owner holds the type for the cache's life.
//     A registration made as the last hold goes gets fresh informers,
//     never the stopping ones, and its metric series are its own.
//     TypeStatus.Owners and opkit_cache_holds say who holds what.
//   - Lazy for the many, full for the few read: Lazy caches a kind as
//     metadata only and fetches a full object when first read, holding it
//     until it changes; a Get never returns an object older than the
//     metadata.
//   - Owners built in: Lister.ControlledBy lists an owner's children by
//     an index of owners' UIDs, so same-named owners in other
//     namespaces are never mixed in.
//   - Sharded on request: a type registered with TypeOptions.Sharded
//     caches only the objects of the slots last given to Cache.SetSlots;
//     reads see the old slot set or the new, never a gap, and handlers are
//     handed an add per object gained and a delete per object lost.
//   - Patient with missing types: a type whose CRD is not installed is
//     reported as ErrNotInstalled and synced once it appears, without a
//     restart (looked up every Options.CRDPollInterval).
//   - Kinds that come and go: a CRD deleted while its type is cached is
//     noticed from the informers' 404s and confirmed by discovery (at most
//     once per CRDPollInterval). The informers stop asking the API server
//     and hand their handlers, after every earlier event, one delete per
//     object they still held; reads fail with ErrDeleted (which wraps
//     ErrNotInstalled) and TypeStatus.Deleted says when. Once the CRD is
//     installed again, fresh informers list and watch the type.
//   - Back with the API server: once a list or watch cannot connect, the
//     informers' next lists and watches wait while one of them asks the
//     API server's /readyz every half second, and all go on at its first
//     answer, instead of client-go's backoff of up to 30 s.
//   - Clear about failures: Status and WaitForSync name each type not
//     synced and why; a list or watch refused by RBAC names the verb,
//     resource and namespace to grant. Lister.Status reports one type,
//     for its owner's own status; a type registered after Start
//     (TypeStatus.AfterStart) does not count toward the manager's
//     readiness.
//   - Efficient on the wire: built-in types are decoded from protobuf,
//     custom resources from JSON; watches ask for bookmarks, and the
//     initial sync is one streaming list where the API server supports it.
//     Lists and watches ask for uncompressed responses, as
//     kube-controller-manager's do: on a cluster's network gzip costs the
//     API server and the operator more CPU than it saves in time.
//     Metadata-only watch events are decoded once, in place, without what
//     the cache strips (managed fields' field sets, the last-applied
//     annotation).
//   - Testable: Lister.WaitFor waits until the cache holds a write's
//     resourceVersion; package cachetest puts a real
//     Lister over objects in memory.
//   - Observable: with Options.Registerer, per type the objects cached,
//     slots held, relists, watch restarts, time to first sync, event lag
//     and failed lists and watches (opkit_cache_objects and the like); no
//     global registration.
//
// # Differences from client-go and controller-runtime
//
//   - Reads do not copy; controller-runtime's cached client deep-copies on
//     every Get and List by default.
//   - managedFields and the last-applied annotation are stripped by
//     default; both peers keep them.
//   - Index lookups are not scoped to a namespace: Lister.ByIndex, like
//     client-go's Indexer.ByIndex, searches every cached namespace, where
//     controller-runtime scopes MatchingFields to the List's namespace. An
//     index ported as-is whose values are names then finds same-named
//     objects' dependents in other namespaces too: use
//     Lister.ByIndexInNamespace, put the namespace in the values, or use
//     Lister.ControlledBy for children by owner.
//   - Results are sorted; the peers' come in map order.
//   - Types are registered explicitly; controller-runtime starts an
//     informer for any type a Get or List asks for.
//   - A List of a cluster-scoped type with a namespace is an error;
//     controller-runtime's cached client returns no object (see
//     Lister.List). A Get with a namespace ignores it, as the peers do.
//   - A type whose CRD is missing does not fail Start; one whose CRD is
//     deleted stops its informers, where client-go's keep listing a
//     resource that is gone, with backoff, and still report it synced.
//   - A modified cached object is reported by opkit's mutation detector,
//     naming the object, the changed fields and the reader, instead of
//     client-go's detector panicking from an informer goroutine.
//
// # Finding who modified a cached object
//
// With OPKIT_CACHE_MUTATION_DETECTOR=true (testenv.Main sets it) or
// Options.Mutations.Detect, a reader that modifies a cached object is
// reported, even if it writes the object back before the next check: a
// panic by default, a failed test with testenv.ReportMutations. Run again
// with OPKIT_CACHE_MUTATION_TRACE=1 to learn where the object was read
// (MutationOptions).
package cache
