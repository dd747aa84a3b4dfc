package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/source"
)

// eventLag measures a controller's opkit_source_event_lag_seconds and
// opkit_controller_event_lag_seconds: its sources add each key with the
// time of the change behind it, the queue keeps the earliest per key, and
// a worker gets that time with the key. Kept only with
// Options.Registerer. Tracing keeps the change times too, for the
// reconcile span's attributes, without the metrics (source and e2e nil).
type eventLag struct {
	name   string
	source *prometheus.HistogramVec
	e2e    prometheus.Observer
}

// newEventLag returns the controller's lag metrics, or, when reg is nil,
// the change times alone if traced, else nil.
func newEventLag(reg prometheus.Registerer, name string, traced bool) (*eventLag, error) {
	if reg == nil {
		if !traced {
			return nil, nil
		}
		return &eventLag{name: name}, nil
	}
	m, err := imetrics.NewEventLag(reg)
	if err != nil {
		return nil, err
	}
	return &eventLag{
		name:   name,
		source: m.Source,
		e2e:    m.Controller.WithLabelValues(name),
	}, nil
}

// sourceLag is what the controller's sources measure.
func (l *eventLag) sourceLag() source.Lag {
	lag := source.Lag{Changes: true}
	if l.source != nil {
		lag.Queued = func(typ string) func(float64) { return l.source.WithLabelValues(l.name, typ).Observe }
	}
	return lag
}

// reconcileStarts observes the lag of changed, the time of the change that
// queued the key whose reconcile starts at now, if it is known. A nil l
// measures nothing.
func (l *eventLag) reconcileStarts(changed, now time.Time) {
	if l != nil && l.e2e != nil && !changed.IsZero() {
		// A change dated after now is no lag (see internal/informer.Lag).
		l.e2e.Observe(max(now.Sub(changed), 0).Seconds())
	}
}
