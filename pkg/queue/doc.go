// Package queue provides Queue, the work queue between events and workers: a
// generic, de-duplicating, rate-limited priority queue with aging and
// optional fairness across tenants.
//
// Its contract:
//
//   - De-duplicating: a key is queued at most once. Adding it again does
//     nothing, except that a higher priority raises it and an earlier time
//     brings a delayed key forward.
//   - Exclusive: a key handed out by Get is not handed out again until
//     Done is called with it.
//   - Nothing lost: a key added while it is being processed is queued again
//     at Done, with the highest priority and earliest time it was added with.
//   - Prioritised: the highest priority first; within one, first in, first
//     out, or round-robin across tenants when Options.Tenant is set.
//   - Starvation-free: once a key has been ready for Options.MaxWait
//     (default 10s), at least every other Get serves the oldest such key.
//   - Fair (optional): a tenant with a backlog delays another tenant's key
//     by at most one key per other tenant at the same priority. With
//     Options.TenantGroup, two-level: a group of tenants with a backlog
//     delays another group's key by at most one key per other group, and
//     a tenant another tenant of its group by at most one per other tenant
//     of the group.
//   - Spare gets: GetSpare hands out only keys of tenants with nothing in
//     flight, and only while every worker that calls Get is busy.
//   - Rate-limited: AddRateLimited delays a key by Options.RateLimiter
//     (default: per-key backoff from 5ms to 1000s); Forget resets it.
//   - Delays: AddAfter makes a key ready later; of two delays the earlier
//     wins, and a plain Add makes it ready now.
//   - Shutdown: after ShutDown adds are ignored and Get returns shutdown;
//     ShutDownWithDrain also waits, bounded by its context, until every key
//     handed out has been passed to Done.
//   - Change times: GetChanged hands a key out with the earliest
//     AddOpts.Changed of its adds since it was last handed out, for
//     measuring how long changes wait; a queue whose adds carry none keeps
//     none.
//   - Observable: client-go's workqueue metrics, through Options.Metrics;
//     no global state, and none kept when it is nil.
//   - Safe for concurrent use, and cheap: no goroutine per key.
//
// # Differences from client-go and controller-runtime
//
// Where Queue's semantics differ from client-go's
// workqueue.TypedRateLimitingInterface or controller-runtime's
// priorityqueue.PriorityQueue (v0.25, its controllers' default), they are
// chosen, and listed here; everything else behaves as in both:
//
//   - After ShutDown, Get hands out nothing more, even keys still queued,
//     as controller-runtime's; client-go's hands them out until empty. So a
//     key queued again by its Done during ShutDownWithDrain is not handed
//     out either.
//   - A ShutDown during ShutDownWithDrain ends the drain at once, as in
//     client-go, with an error wrapping ErrDrainStopped; the drain also ends
//     with its context (client-go's waits for ever).
//     controller-runtime's ShutDownWithDrain does not wait at all.
//   - Len counts only keys ready to be handed out, as client-go's;
//     controller-runtime's also counts keys added again while being
//     processed (workqueue_depth counts those in all three: see package
//     metrics).
//   - A key added again while being processed is queued at Done as if
//     added then, as in client-go; controller-runtime's keeps the place of
//     the re-add.
//   - AddOpts with RateLimited and After delays by the longer of the two;
//     controller-runtime uses the shorter, so an After there can undo the
//     backoff.
//   - A plain Add of a delayed key makes it ready now, once, as
//     controller-runtime does; client-go processes it now and again when
//     the delay ends.
//   - Priorities age (Options.MaxWait); controller-runtime's are strict,
//     which a negative MaxWait gives. client-go has no priorities.
package queue
