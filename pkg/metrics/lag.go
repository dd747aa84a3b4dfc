package metrics

import "github.com/prometheus/client_golang/prometheus"

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

// LagBuckets are the buckets of every opkit event lag histogram: 1ms to
// 60s.
var LagBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// EventLag holds the SourceEventLag and ControllerEventLag histograms of
// every controller built on one registry.
type EventLag struct {
	Source     *prometheus.HistogramVec // by controller and type
	Controller *prometheus.HistogramVec // by controller
}

// NewEventLag creates the lag histograms and registers them with reg.
// Called again with the same registry, it returns the histograms
// registered first.
func NewEventLag(reg prometheus.Registerer) (*EventLag, error) {
	m := &EventLag{
		Source: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: SourceEventLag, Help: "Seconds from an informer's delivery of an event to its keys being queued, per controller and type",
			Buckets: LagBuckets,
		}, []string{"controller", "type"}),
		Controller: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: ControllerEventLag, Help: "Seconds from a change at the API server (estimated from the object's timestamps, whole seconds) to the start of the reconcile it caused, per controller",
			Buckets: LagBuckets,
		}, []string{"controller"}),
	}
	var errs []error
	share(reg, &errs, &m.Source)
	share(reg, &errs, &m.Controller)
	if err := joinErrs("event lag", errs); err != nil {
		return nil, err
	}
	return m, nil
}
