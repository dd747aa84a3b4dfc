// Package sharding says which slot a key or object belongs to, and writes a
// set of slots as a server-side shard selector (KEP-5866, kube-apiserver's
// ShardedListAndWatch feature gate), so that each replica of a sharded
// operator can reconcile, and cache, only its share of the objects.
//
//   - Slots: NewSlots(n) divides the hash space into n equal slots, n a
//     power of two up to MaxSlots. The hash is the API server's own, so
//     the slot SlotOf computes for an object is the slot whose selector
//     the server returns it for.
//   - Keys: ByUID (the default: objects spread evenly), ByNamespace (a
//     namespace stays whole), ByControllerOwner (a child lands with its
//     controller owner). The API server cannot filter ByControllerOwner.
//   - Selector checks everything the server would refuse, and refuses an
//     empty set: a replica holding no slot must not watch. Any set of
//     slots fits the server's limit.
//   - Supported probes whether the API server applies shard selectors,
//     which one without the gate ignores silently. It needs RBAC list on
//     the resource it names, nothing else.
//   - TweakListOptions puts a selector into an informer's lists and
//     watches.
//   - Slots is a value type safe for concurrent use; nothing here keeps
//     state or talks to the API server except Supported. Who holds which
//     slot is decided elsewhere (manager.ShardingOptions).
package sharding
