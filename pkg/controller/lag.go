package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/pkg/metrics"
	"github.com/opkit-dev/opkit/pkg/source"
)

// eventLag measures a controller's metrics.SourceEventLag and
// metrics.ControllerEventLag: its sources record when the change behind
// each key they queue happened, and a worker takes that time when it gets
// the key. Kept only with Options.Registerer: it costs a map operation per
// key queued and per reconcile.
type eventLag[K comparable] struct {
	name    string
	source  *prometheus.HistogramVec
	e2e     prometheus.Observer
	changes *source.ChangeTimes[K]
	now     func() time.Time
}

// newEventLag returns the controller's lag metrics, or nil when reg is nil.
func newEventLag[K comparable](reg prometheus.Registerer, name string) (*eventLag[K], error) {
	if reg == nil {
		return nil, nil
	}
	m, err := metrics.NewEventLag(reg)
	if err != nil {
		return nil, err
	}
	return &eventLag[K]{
		name:    name,
		source:  m.Source,
		e2e:     m.Controller.WithLabelValues(name),
		changes: source.NewChangeTimes[K](),
		now:     time.Now,
	}, nil
}

// sourceLag is what the controller's sources measure.
func (l *eventLag[K]) sourceLag() source.Lag[K] {
	return source.Lag[K]{
		Queued:  func(typ string) func(float64) { return l.source.WithLabelValues(l.name, typ).Observe },
		Changes: l.changes,
	}
}

// reconcileStarts observes the lag of the change that queued key, if its
// time is known. A nil l measures nothing.
func (l *eventLag[K]) reconcileStarts(key K) {
	if l == nil {
		return
	}
	if t, ok := l.changes.Take(key); ok {
		l.e2e.Observe(l.now().Sub(t).Seconds())
	}
}
