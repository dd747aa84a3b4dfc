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
//   - Rate-limited: AddRateLimited delays a key by a
//     k8s.io/client-go/util/workqueue.TypedRateLimiter; the default backs off
//     per key from 5ms, doubling up to 1000s, and Forget resets it.
//   - Delays: AddAfter makes a key ready later; of two delays the earlier
//     wins, and a plain Add makes it ready now.
//   - Shutdown: after ShutDown adds are ignored and Get returns shutdown;
//     ShutDownWithDrain also waits, bounded by a context, until every key
//     handed out has been passed to Done.
//   - Observable: metrics through MetricsProvider, with client-go's workqueue
//     metric names, and no global state; none are kept when it is nil.
//   - Cheap: one lock, no allocation per key in steady state, no goroutine
//     per key; a queue runs one goroutine for delays and, with metrics, one
//     that updates the in-flight gauges. Both end at ShutDown.
package queue
