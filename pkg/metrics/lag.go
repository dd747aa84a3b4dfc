package metrics

// The event lag of a controller, in three parts and end to end. With the
// cache's opkit_cache_event_lag_seconds (the change at the API server to
// the informer's delivery) and workqueue_queue_duration_seconds (the wait
// in the queue until a worker gets the key), they tell where the time
// between a change and its reconcile goes.
const (
	// SourceEventLag observes, per informer event that reached a
	// controller's handler, the seconds from the informer's delivery to
	// the handler's return, its keys queued: predicates, map functions and
	// queue adds. Labelled by controller and type ("v1/ConfigMap").
	SourceEventLag = "opkit_source_event_lag_seconds"
	// ControllerEventLag observes, per reconcile caused by an informer
	// event whose change time is known, the seconds from the change at the
	// API server (estimated as for opkit_cache_event_lag_seconds: whole
	// seconds, so up to 1s too long, and subject to clock skew) to the
	// start of the reconcile. When several changes of one key coalesce
	// into one reconcile, the earliest counts. Reconciles of retries,
	// requeues, timers and changes of unknown time are not observed.
	// Labelled by controller.
	ControllerEventLag = "opkit_controller_event_lag_seconds"
)
