// Package sharding says which slot a key or object belongs to, and writes a
// set of slots as a server-side shard selector (KEP-5866, kube-apiserver's
// ShardedListAndWatch feature gate), so that each replica of a sharded
// operator can reconcile, and cache, only its share of the objects.
//
//   - Slots: NewSlots(n) divides the 64-bit hash space into n equal slots,
//     n a power of two from 1 to MaxSlots; slot i is the hashes whose top
//     log2(n) bits are i, so each slot is exactly one shardRange. The hash
//     is the API server's own (64-bit FNV-1a, apimachinery's
//     sharding.HashField), so the slot SlotOf computes for an object is the
//     slot whose selector the server returns it for.
//   - Keys: ByUID (the default: objects spread evenly), ByNamespace (a
//     namespace stays whole), ByControllerOwner (a child lands in its
//     controller owner's slot, with its parent; without a controller owner,
//     its own UID's). The API server filters only on UID and namespace:
//     ByControllerOwner has no selector, so such children are watched
//     unfiltered and checked with SlotOf before dispatch.
//   - Selector renders a set of slots as shardRange(...) ranges joined by
//     " || ", adjacent slots merged into one range. It checks everything
//     the server would refuse (a malformed selector on a watch is an HTTP
//     500 that an informer retries forever) and refuses an empty set:
//     there is no selector of nothing, and a replica holding no slot must
//     not watch. Any set of MaxSlots slots fits the server's 100,000
//     character limit.
//   - Supported probes whether the API server applies shard selectors: one
//     without the gate ignores them silently and sends everything, and
//     nothing in its answers says so reliably. The probe needs RBAC list on
//     the resource it names, nothing else.
//   - TweakListOptions puts a selector into an informer's lists and
//     watches.
//
// Slots is a value type safe for concurrent use; nothing here keeps state
// or talks to the API server except Supported. Who holds which slot
// (membership, assignment, handover) is decided elsewhere.
package sharding
