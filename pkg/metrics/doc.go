// Package metrics states what the series opkit records promise, for
// dashboards and alerts, and holds NewQueueMetrics, the Prometheus
// metrics provider for a queue of your own. The cache, the controller,
// the manager and the writer register their metrics themselves, into the
// registry they are given; docs/metrics.md lists every series with its
// labels.
//
//   - No global registry: NewQueueMetrics, like every opkit package, takes
//     the prometheus.Registerer to use, which the manager owns.
//   - Queue series carry client-go's workqueue names and
//     controller-runtime's labels: workqueue_depth{name,controller,priority},
//     and {name,controller} on workqueue_adds_total,
//     workqueue_queue_duration_seconds, workqueue_work_duration_seconds,
//     workqueue_unfinished_work_seconds,
//     workqueue_longest_running_processor_seconds and
//     workqueue_retries_total. name and controller both hold the queue's
//     name, so dashboards that group by either work unchanged.
//   - Controller series carry controller-runtime's names, labels and
//     meanings: controller_runtime_reconcile_total{controller,result},
//     controller_runtime_reconcile_errors_total,
//     controller_runtime_terminal_reconcile_errors_total,
//     controller_runtime_reconcile_panics_total,
//     controller_runtime_reconcile_timeouts_total,
//     controller_runtime_reconcile_time_seconds,
//     controller_runtime_max_concurrent_reconciles and
//     controller_runtime_active_workers, each {controller}.
//   - Event lag, from a change at the API server to the start of its
//     reconcile, in histograms with the same buckets (1ms to 60s): the
//     cache's opkit_cache_event_lag_seconds{type,event} to the informer's
//     delivery, opkit_source_event_lag_seconds{controller,type} to the keys
//     queued, workqueue_queue_duration_seconds{name,controller} to a
//     worker's Get, and opkit_controller_event_lag_seconds{controller} end
//     to end. Change times have whole seconds, so the first and the total
//     read up to 1s long; both need the cache's metrics on.
//   - Shared: metrics registered again on one registry reuse the
//     collectors registered first; series are told apart by their labels.
//   - A metric that cannot be registered is an error, returned; nothing
//     panics.
//
// # Differences from client-go / controller-runtime
//
// The queue series count what client-go's do (v0.37,
// util/workqueue/metrics.go) and carry controller-runtime's labels (v0.25,
// pkg/internal/metrics/workqueue.go), except where a bullet says otherwise.
// The controller series are the same as controller-runtime's in all but the
// last bullet.
//
//   - Every workqueue series has name and controller, both the queue's
//     name, as controller-runtime's do; workqueue_depth also has priority.
//     client-go's series have name only.
//   - workqueue_depth counts the keys ready to be handed out and the keys
//     added again, without a delay, while being processed (at the priority
//     they will be queued at), as both peers do. queue.Queue.Len counts
//     the former only, as client-go's Len does.
//   - A key added again with a delay while being processed joins
//     workqueue_depth and workqueue_adds_total at Done, or when its delay
//     ends if that is later. client-go counts it when the delay ends even
//     if the key is still being processed.
//   - workqueue_adds_total counts each time a key becomes due: added
//     without a delay, its delay ended, or added again while being
//     processed; not adds of a key already due. Both peers count the same.
//   - workqueue_retries_total counts every delayed add (AddAfter,
//     AddRateLimited, AddWithOpts with After or RateLimited), whatever the
//     delay, 0 included, as client-go does; adds ignored at shutdown are
//     not counted. controller-runtime's priority queue counts only delays
//     above zero.
//   - workqueue_queue_duration_seconds measures from when a key became due
//     to Get. For a key added again while being processed that is Done,
//     not the re-add as in both peers, so the time the worker still spent
//     on the key is not counted as time queued.
//   - workqueue_depth's priority label holds every priority used, as a
//     number. controller-runtime's priority queue folds priorities beyond
//     its 25th into "exceeded_cardinality_limit", and its plain queue
//     leaves the label empty.
//   - The histograms have classic buckets only, the same as both peers'
//     (workqueue: 10ns to 1000s, by tens;
//     controller_runtime_reconcile_time_seconds: controller-runtime's 40
//     buckets). controller-runtime also exposes them as native histograms
//     to scrapers that ask; opkit does not, which keeps observing cheap on
//     the queue's hot path. Queries over _bucket series read the same.
package metrics
