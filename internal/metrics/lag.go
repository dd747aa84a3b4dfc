package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/internal/promreg"
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
			Name: SourceEventLag, Help: "Seconds from an informer's delivery of an event (dated as it begins to store it) to its keys being queued, per controller and type; a sample of the events above 2,000 a second per informer",
			Buckets: LagBuckets,
		}, []string{"controller", "type"}),
		Controller: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: ControllerEventLag, Help: "Seconds from a change at the API server (estimated from the object's timestamps, whole seconds) to the start of the reconcile it caused, per controller; a sample of the events above 2,000 a second per informer",
			Buckets: LagBuckets,
		}, []string{"controller"}),
	}
	var errs []error
	promreg.Share(reg, &errs, &m.Source)
	promreg.Share(reg, &errs, &m.Controller)
	if err := promreg.Join("event lag", errs); err != nil {
		return nil, err
	}
	return m, nil
}
