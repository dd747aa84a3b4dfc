package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/internal/promreg"
)

// ControllerMetrics holds the reconcile metrics of every controller built on
// one registry.
type ControllerMetrics struct {
	total, errors, terminal, panics, timeouts *prometheus.CounterVec
	time                                      *prometheus.HistogramVec
	workers, active                           *prometheus.GaugeVec
}

// NewControllerMetrics creates the reconcile metrics and registers them
// with reg. Called again with the same registry, it returns metrics that
// share the collectors registered first.
func NewControllerMetrics(reg prometheus.Registerer) (*ControllerMetrics, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append([]string{"controller"}, labels...))
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"controller"})
	}
	m := &ControllerMetrics{
		total:    counter(ReconcileTotal, "Total number of reconciliations per controller", "result"),
		errors:   counter(ReconcileErrors, "Total number of reconciliation errors per controller"),
		terminal: counter(TerminalReconcileErrors, "Total number of terminal reconciliation errors per controller"),
		panics:   counter(ReconcilePanics, "Total number of reconciliation panics per controller"),
		timeouts: counter(ReconcileTimeouts, "Total number of reconciliation timeouts per controller"),
		time: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: ReconcileTime, Help: "Length of time per reconciliation per controller",
			// controller-runtime's buckets, so that its dashboards'
			// quantiles read the same.
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
				1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60},
		}, []string{"controller"}),
		workers: gauge(MaxConcurrentReconciles, "Maximum number of concurrent reconciles per controller"),
		active:  gauge(ActiveWorkers, "Number of currently used workers per controller"),
	}
	var errs []error
	for _, c := range []**prometheus.CounterVec{&m.total, &m.errors, &m.terminal, &m.panics, &m.timeouts} {
		promreg.Share(reg, &errs, c)
	}
	promreg.Share(reg, &errs, &m.time)
	promreg.Share(reg, &errs, &m.workers)
	promreg.Share(reg, &errs, &m.active)
	if err := promreg.Join("controller", errs); err != nil {
		return nil, err
	}
	return m, nil
}

// Reconciles is one controller's view of the reconcile metrics.
type Reconciles struct {
	Success, Error, Requeue, RequeueAfter prometheus.Counter
	Errors, Terminal, Panics, Timeouts    prometheus.Counter
	Time                                  prometheus.Observer
	ActiveWorkers                         prometheus.Gauge
}

// For returns the metrics of the controller named name, every series
// initialised (to zero, and the worker count to workers) so that rates and
// alerts see it before its first reconcile.
func (m *ControllerMetrics) For(name string, workers int) Reconciles {
	r := Reconciles{
		Success:       m.total.WithLabelValues(name, ResultSuccess),
		Error:         m.total.WithLabelValues(name, ResultError),
		Requeue:       m.total.WithLabelValues(name, ResultRequeue),
		RequeueAfter:  m.total.WithLabelValues(name, ResultRequeueAfter),
		Errors:        m.errors.WithLabelValues(name),
		Terminal:      m.terminal.WithLabelValues(name),
		Panics:        m.panics.WithLabelValues(name),
		Timeouts:      m.timeouts.WithLabelValues(name),
		Time:          m.time.WithLabelValues(name),
		ActiveWorkers: m.active.WithLabelValues(name),
	}
	m.workers.WithLabelValues(name).Set(float64(workers))
	r.ActiveWorkers.Set(0)
	return r
}
