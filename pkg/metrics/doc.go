// Package metrics states what the series opkit records promise, for
// dashboards and alerts, and holds NewQueueMetrics, the Prometheus
// metrics provider for a queue of your own. The cache, the
// controller, the manager and the writer register their metrics
// themselves, into the registry they are given; docs/metrics.md lists
// every series with its labels.
//
//   - Nothing registers into a global registry: NewQueueMetrics, like every
//     opkit package, takes the prometheus.Registerer to use, which the
//     manager owns and passes down.
//   - Queue metrics carry client-go's workqueue names, and controller-runtime's
//     labels: workqueue_depth{name,controller,priority}, and
//     {name,controller} on workqueue_adds_total,
//     workqueue_queue_duration_seconds, workqueue_work_duration_seconds,
//     workqueue_unfinished_work_seconds,
//     workqueue_longest_running_processor_seconds and
//     workqueue_retries_total. name and controller both hold the queue's
//     name, which a controller sets to its own, so dashboards that group by
//     either (kubebuilder's do both) work unchanged.
//   - Controller metrics carry controller-runtime's names, labels and
//     meanings: controller_runtime_reconcile_total{controller,result},
//     controller_runtime_reconcile_errors_total,
//     controller_runtime_terminal_reconcile_errors_total,
//     controller_runtime_reconcile_panics_total,
//     controller_runtime_reconcile_timeouts_total,
//     controller_runtime_reconcile_time_seconds,
//     controller_runtime_max_concurrent_reconciles and
//     controller_runtime_active_workers, each {controller}.
//   - Event lag, from a change at the API server to the start of the
//     reconcile it caused, in three parts and in total, each a histogram
//     with the same buckets (1ms to 60s): (a) the cache's
//     opkit_cache_event_lag_seconds{type,event}, from the change to the
//     informer's delivery; (b) opkit_source_event_lag_seconds{controller,type},
//     from the delivery to the handler's return with the
//     keys queued (predicates and map functions included); (c)
//     workqueue_queue_duration_seconds{name,controller}, the wait in the
//     queue until a worker gets the key; and, end to end,
//     opkit_controller_event_lag_seconds{controller}.
//     The change's time is estimated from the object's own timestamps
//     (managedFields times, creation and deletion timestamps), which have
//     whole seconds: (a) and the total read up to 1s long, and include
//     any skew between the API server's clock and the operator's. Initial
//     lists and resyncs are not lag and are not observed; nor are
//     reconciles of retries and requeues. When several changes of a key
//     coalesce into one reconcile, the earliest counts. (a) and the total
//     need the cache's metrics on (the manager sets its Registerer).
//   - Shared: metrics registered again on one registry (NewQueueMetrics
//     called for every queue, every controller of a manager registering
//     its own) reuse the collectors registered first; series are told
//     apart by their labels.
//   - Metrics that cannot be registered (say, a collector of the same name
//     and another shape) are an error, returned; nothing panics.
//
// # Differences from client-go / controller-runtime
//
// The queue series count what client-go's do (v0.37,
// util/workqueue/metrics.go) and carry controller-runtime's labels (v0.25,
// pkg/internal/metrics/workqueue.go), except where a bullet says otherwise.
// The controller series are the same as controller-runtime's in all but the
// last bullet. Each bullet is tested by the subtest of TestDifferences named
// in brackets.
//
//   - [Labels] Every workqueue series has name and controller, both the
//     queue's name, as controller-runtime's do; workqueue_depth also has
//     priority. client-go's series have name only.
//   - [DepthCountsReAddWhileProcessing] workqueue_depth counts the keys
//     ready to be handed out and the keys added again, without a delay,
//     while being processed (at the priority they will be queued at), as
//     both peers do. queue.Queue.Len counts the former only, as client-go's
//     Len does.
//   - [DelayedReAddWhileProcessing] A key added again with a delay while
//     being processed joins workqueue_depth and workqueue_adds_total at
//     Done, or when its delay ends if that is later. client-go counts it
//     when the delay ends even if the key is still being processed.
//   - [AddsCountWhenReady] workqueue_adds_total counts each time a key
//     becomes due to be handed out: added without a delay, or its delay
//     ended, or added again while being processed. Adds of a key already
//     due are not counted. Both peers count the same way.
//   - [RetriesCountEveryDelayedAdd] workqueue_retries_total counts every
//     AddAfter and AddRateLimited, and every AddWithOpts with After or
//     RateLimited set, whatever the delay (AddAfter(key, 0) included) and
//     whether or not the key was queued already, as client-go does; adds
//     ignored at shutdown are not counted. controller-runtime's priority
//     queue counts only adds whose delay is above zero.
//   - [QueueDurationFromReady] workqueue_queue_duration_seconds measures
//     from when a key became due to Get. For a key added again while being
//     processed that is Done, not the re-add as in both peers, so the time
//     the worker still spent on the key is not counted as time queued.
//   - [PriorityLabelUncapped] workqueue_depth's priority label holds every
//     priority used, as a number. controller-runtime's priority queue folds
//     priorities beyond its 25th into "exceeded_cardinality_limit", and its
//     plain queue leaves the label empty.
//   - [ClassicHistograms] The histograms have classic buckets only, the
//     same as both peers' (workqueue: 10ns to 1000s, by tens;
//     controller_runtime_reconcile_time_seconds: controller-runtime's 40
//     buckets). controller-runtime also exposes them as native histograms to
//     scrapers that ask; opkit does not, which keeps observing cheap on the
//     queue's hot path. Queries over _bucket series read the same.
package metrics
