// Package queue provides Queue, the work queue between events and workers: a
// generic, de-duplicating, rate-limited priority queue with aging and
// optional fairness across tenants.
//
// Its contract:
//
//   - De-duplicating: a key is queued at most once. Adding a queued key again
//     does nothing, except that a higher priority raises it and an earlier
//     time brings a delayed key forward.
//   - Exclusive: a key handed out by Get is not handed out again until Done
//     is called with it, so no two workers ever process one key at once.
//   - Nothing lost: a key added while it is being processed is queued again
//     at Done, with the highest priority and earliest time it was added with.
//   - Prioritised: Get hands out the highest priority first; within one
//     priority, first in, first out, or round-robin across tenants when
//     Options.Tenant is set.
//   - Starvation-free: once a key has been ready for Options.MaxWait (default
//     10s), at least every other Get serves the oldest such key, so under any
//     stream of higher-priority work it is handed out within 2(n+1) Gets,
//     where n is the number of keys that were ready before it. Ages are
//     told to within MaxWait/16, late rather than early, by a clock reading
//     refreshed every MaxWait/32 while keys are ready, so Add and Get read
//     no clock unless metrics are on.
//   - Fair (optional): a tenant with a backlog delays another tenant's key by
//     at most one key per other tenant at the same priority.
//   - Spare gets: GetSpare hands out only keys of tenants with no key in
//     flight, and only while every worker that calls Get is busy, under the
//     same rules as Get, and blocks otherwise; so spare workers that call it
//     stay free for quiet tenants however many of a flooding tenant's keys
//     are queued and in flight, and never run beside an idle worker. Get
//     and Done count keys in flight per tenant only once GetSpare has been
//     called.
//   - Rate-limited: AddRateLimited delays a key by a
//     k8s.io/client-go/util/workqueue.TypedRateLimiter; the default backs off
//     per key from 5ms, doubling up to 1000s, and Forget resets it.
//   - Delays: AddAfter makes a key ready later; of two delays the earlier
//     wins, and a plain Add makes it ready now.
//   - Shutdown: after ShutDown adds are ignored and Get returns shutdown;
//     ShutDownWithDrain also waits, bounded by a context, until every key
//     handed out has been passed to Done; a ShutDown meanwhile ends the wait.
//   - Observable: metrics through a client-go workqueue.MetricsProvider
//     (Options.Metrics), with client-go's workqueue metric names and
//     meanings (package metrics lists the few differences), depth split by
//     priority if it is a PriorityDepthProvider, and no global state; none
//     are kept when it is nil.
//   - Cheap: one lock, no allocation per key in steady state, no goroutine
//     per key; a queue runs one goroutine for delays and, with metrics, one
//     that updates the in-flight gauges. Both end at ShutDown.
//
// # Differences from client-go and controller-runtime
//
// Where Queue's semantics differ from those of client-go's
// workqueue.TypedRateLimitingInterface or controller-runtime's
// priorityqueue.PriorityQueue (v0.25, its controllers' default queue), they
// are chosen, and listed here; everything else behaves as in both. Each
// bullet is tested by the subtest of TestDifferences named in brackets. (The
// signatures differ too, Get returning the priority and ShutDownWithDrain
// taking a context, but the compiler tells those.)
//
//   - [GetAfterShutDown] After ShutDown, Get hands out nothing more, even
//     keys still queued; they stay queued, unprocessed. client-go's Get
//     hands out queued keys until the queue is empty; controller-runtime's
//     stops at once, like this one. Stopping at once lets a controller stop
//     promptly: its sources queue everything again after a restart.
//   - [ReAddDuringDrain] So a key added while it was being processed, and
//     queued again by its Done during ShutDownWithDrain, is not handed out;
//     adds during the drain are ignored, as in both peers. A client-go
//     worker would process that key before seeing shutdown.
//   - [ShutDownEndsDrain] A ShutDown during ShutDownWithDrain ends the
//     drain at once, as in client-go; ShutDownWithDrain then returns an
//     error wrapping ErrDrainStopped that names a key still in flight.
//     controller-runtime's ShutDownWithDrain does not wait at all.
//   - [DrainBoundedByContext] ShutDownWithDrain's wait ends with its
//     context too, and returns an error wrapping the context's cause.
//     client-go's waits for ever if a worker never calls Done.
//   - [LenCountsReadyKeysOnly] Len counts the keys ready to be handed out:
//     not keys waiting for a delay, not keys being processed, not keys added
//     again while being processed. That is client-go's meaning;
//     controller-runtime's Len also counts keys added again while being
//     processed. (workqueue_depth counts those, as in both peers: see
//     package metrics.)
//   - [ReAddRejoinsAtDone] A key added again while it is being processed
//     is queued at Done as if added then: behind the keys of its priority
//     added meanwhile, even those added after it. client-go does the same;
//     controller-runtime's keeps the place of the re-add, so there it comes
//     before the keys added after it.
//   - [RateLimitedAndAfterLongerWins] AddOpts with RateLimited and After
//     delays by the longer of the two: the rate limiter's delay still
//     holds, and After is a floor. controller-runtime uses the shorter, so
//     that an After there can undo the backoff. Neither applies between two
//     separate adds of one key, where the earlier time wins, as in both.
//   - [AddMakesDelayedKeyReadyOnce] A plain Add of a key waiting for a
//     delay makes it ready now and drops the delay, as controller-runtime
//     does. client-go queues it now and again when the delay ends, so the
//     key is processed twice.
//   - [AgingOvertakesPriority] Priorities age: once a key has been ready
//     for Options.MaxWait, every other Get serves the oldest such key
//     whatever its priority. controller-runtime's priorities are strict, so
//     a steady stream of high-priority keys starves the rest; set MaxWait
//     negative for that. client-go has no priorities.
package queue
