// Package dispatch gates a sharded operator's reconciles: a replica
// reconciles a key only while it holds the key's slot, and gives a slot up
// only once the slot's reconciles have returned. It works on every API
// server: the slot check happens when a worker takes a key, before
// anything else, whether or not the informers are split by slots.
//
//   - Dispatcher is one per process. Its Admit, asked before each
//     reconcile, says yes only for a slot the member may dispatch
//     (membership.Member.MayDispatch) and not being released, and counts
//     the reconcile as in flight until it returns; check and count happen
//     under one lock, so a release never misses a reconcile that started.
//     A key of a slot the member holds while its fence is closed
//     (renewals late: Holds true, MayDispatch false) is retried, not
//     skipped: the fence opens again at the next successful renewal with
//     no Held, so a skipped key would never be queued again.
//   - Held (membership.Handler) queues every key of the new slots from the
//     primary type's cache, so the new holder reconciles what it now owns
//     even if no event comes. Release refuses the slots' keys at once,
//     then returns once their reconciles in flight have returned.
//   - Split caches: with Options.Cache (a cache whose sharded types hold
//     only some slots, such as *cache.Cache), the Dispatcher keeps the
//     cache holding the slots held or being released (Run). Held asks for
//     the gained slots and the gates answer Retry (not Skip: the keys are
//     this replica's) for their keys until SetSlots has returned; only
//     then are the slots' keys queued and admitted, so a reconciler never
//     reads NotFound for an object that exists. Release drops slots from
//     the cache once their reconciles have returned. A failed SetSlots
//     keeps the slots it may have dropped or not added refused, is
//     retried with backoff, counted
//     (imetrics.ShardingCacheSetSlotsErrors) and
//     reported by CacheReady (TestHeldWaitsForTheCache,
//     TestSetSlotsFailureKeepsRefusing,
//     TestReleaseDropsTheSlotAfterItsReconciles). With a split cache a
//     key whose slot cannot be told is skipped, not retried: the cache
//     holds every object of this replica's slots and the primary source
//     queues each one's key as it arrives, so such a key is another
//     replica's (TestSplitCacheSkipsUncachedKeys).
//   - Gate is one per controller (controller.Gate), keyed by
//     reconcile.Request, and knows how a key maps to a slot:
//     sharding.ByNamespace hashes the key's namespace, with no lookup;
//     sharding.ByUID (the default) and sharding.ByControllerOwner need
//     the object, so the gate records each key's slot when the primary
//     type's source sees the object (Gate.Record wraps its handler),
//     keeps a deleted object's slot until its key has been reconciled
//     (or, for a slot another replica holds, for GateOptions.TombstoneTTL,
//     so memory does not grow with every object ever deleted), and
//     otherwise looks the key up in the primary Lister. A key whose
//     slot is still unknown (its object not in this replica's cache yet,
//     or never) is retried with backoff, MaxUnknownRetries times, then
//     dropped with a log line; both are counted.
//   - Skipped keys are forgotten: the slot's holder has its own event for
//     each of them, and takes every key of a slot when it gains it.
//   - Metrics (declared in internal/metrics):
//     ShardingDispatchSkipped{controller,reason} counts the keys a worker
//     did not reconcile (SkippedSlotNotCached and SkippedFenced among
//     them); RegisterMemberMetrics serves a member's Stats
//     (ShardingSlotsHeld, ShardingMembers, ShardingHandovers,
//     ShardingLastTakeover).
//
// A name reused by a new object moves its key to the new UID's slot as
// soon as the new object is seen: for that moment the old and new slots'
// holders may both reconcile the key. Writes with resourceVersion
// preconditions catch what slips through, as for fencing.
package dispatch
