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
//     stripping.
//   - Compact: objects of one informer share what they have in common.
//     Equal label, annotation, node-selector and resource maps are one map,
//     and repeated strings (namespaces, label keys and values, images, owner
//     names) one string; the replicas of a workload repeat nearly all but
//     their names. Sharing cannot be seen by a reader that does not modify
//     what it reads, which no reader may.
//   - Zero-copy: Lister.Get, List and ByIndex return the cached objects, not
//     copies; Get allocates nothing. Callers must not modify what they get:
//     DeepCopy first. Tests run through testenv.Main have client-go's
//     mutation detector on, which fails a test that modifies a cached object.
//   - Explicit: a type is cached only once it is registered with For (typed),
//     Metadata (metadata only) or Unstructured; reading anything else is an
//     error wrapping ErrNotRegistered, never a silently started informer.
//     Indexes are added before the type's informers start.
//   - One informer per type and scope: registering a type again with the
//     same namespaces, selectors and stripping shares its informers. A type
//     cached in several namespaces has one informer per namespace.
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
//   - Observable: with Options.Registerer, the objects cached, relists, watch
//     restarts and time to first sync of each type (see MetricObjects), and
//     no global registration.
package cache
