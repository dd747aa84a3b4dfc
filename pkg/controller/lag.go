package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/source"
)

// eventLag measures a controller's opkit_source_event_lag_seconds and
// opkit_controller_event_lag_seconds: its sources record when the change behind
// each key they queue happened, and a worker takes that time when it gets
// the key. Kept only with Options.Registerer: it costs a map operation per
// key queued and per reconcile. Tracing keeps the change times too, for
// the reconcile span's attributes, without the metrics (source and e2e
// nil). The change times wait beside the queue, not in it.
type eventLag[K comparable] struct {
	name    string
	source  *prometheus.HistogramVec
	e2e     prometheus.Observer
	changes *source.ChangeTimes[K]
	now     func() time.Time
}

// newEventLag returns the controller's lag metrics, or, when reg is nil,
// the change times alone if traced, else nil.
func newEventLag[K comparable](reg prometheus.Registerer, name string, traced bool) (*eventLag[K], error) {
	if reg == nil {
		if !traced {
			return nil, nil
		}
		return &eventLag[K]{name: name, changes: source.NewChangeTimes[K](), now: time.Now}, nil
	}
	m, err := imetrics.NewEventLag(reg)
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
	lag := source.Lag[K]{Changes: l.changes}
	if l.source != nil {
		lag.Queued = func(typ string) func(float64) { return l.source.WithLabelValues(l.name, typ).Observe }
	}
	return lag
}

// reconcileStarts observes the lag of the change that queued key, if its
// time is known, and returns that time (zero if unknown). A nil l
// measures nothing.
func (l *eventLag[K]) reconcileStarts(key K) time.Time {
	if l == nil {
		return time.Time{}
	}
	t, ok := l.changes.Take(key)
	if ok && l.e2e != nil {
		l.e2e.Observe(l.now().Sub(t).Seconds())
	}
	return t
}
