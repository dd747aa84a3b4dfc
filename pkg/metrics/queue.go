package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"

	"github.com/opkit-dev/opkit/internal/promreg"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// workQueueSubsystem is the subsystem of the queue metrics.
const workQueueSubsystem = "workqueue"

// queueMetrics is the provider NewQueueMetrics returns.
type queueMetrics struct {
	depth                   *prometheus.GaugeVec
	adds                    *prometheus.CounterVec
	latency                 *prometheus.HistogramVec
	workDuration            *prometheus.HistogramVec
	unfinished              *prometheus.GaugeVec
	longestRunningProcessor *prometheus.GaugeVec
	retries                 *prometheus.CounterVec
}

var (
	_ workqueue.MetricsProvider   = (*queueMetrics)(nil)
	_ queue.PriorityDepthProvider = (*queueMetrics)(nil)
)

// NewQueueMetrics creates the queue metrics and registers them with reg,
// and returns a provider, for queue.Options.Metrics, that records into them
// and splits depth by priority (queue.PriorityDepthProvider). One serves
// any number of queues, told apart by the name label (the queue's
// Options.Name); every series also carries a controller label with the
// same value, as controller-runtime's do: a controller names its queue
// after itself. Called again with the same registry, it returns metrics
// that share the collectors registered first, so each queue or controller
// may call it.
func NewQueueMetrics(reg prometheus.Registerer) (workqueue.MetricsProvider, error) {
	// Buckets from 10ns to 1000s, as client-go and controller-runtime use.
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12)
	m := &queueMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: workQueueSubsystem, Name: "depth",
			Help: "Current depth of workqueue by workqueue and priority",
		}, []string{"name", "controller", "priority"}),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: workQueueSubsystem, Name: "adds_total",
			Help: "Total number of adds handled by workqueue",
		}, []string{"name", "controller"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: workQueueSubsystem, Name: "queue_duration_seconds",
			Help:    "How long in seconds an item stays in workqueue before being requested",
			Buckets: buckets,
		}, []string{"name", "controller"}),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: workQueueSubsystem, Name: "work_duration_seconds",
			Help:    "How long in seconds processing an item from workqueue takes.",
			Buckets: buckets,
		}, []string{"name", "controller"}),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: workQueueSubsystem, Name: "unfinished_work_seconds",
			Help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. " +
				"Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
		}, []string{"name", "controller"}),
		longestRunningProcessor: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: workQueueSubsystem, Name: "longest_running_processor_seconds",
			Help: "How many seconds has the longest running processor for workqueue been running.",
		}, []string{"name", "controller"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: workQueueSubsystem, Name: "retries_total",
			Help: "Total number of retries handled by workqueue",
		}, []string{"name", "controller"}),
	}
	var errs []error
	promreg.Share(reg, &errs, &m.depth)
	promreg.Share(reg, &errs, &m.adds)
	promreg.Share(reg, &errs, &m.latency)
	promreg.Share(reg, &errs, &m.workDuration)
	promreg.Share(reg, &errs, &m.unfinished)
	promreg.Share(reg, &errs, &m.longestRunningProcessor)
	promreg.Share(reg, &errs, &m.retries)
	if err := promreg.Join("queue", errs); err != nil {
		return nil, err
	}
	return m, nil
}

// NewPriorityDepthMetric implements queue.PriorityDepthProvider.
func (m *queueMetrics) NewPriorityDepthMetric(name string, priority int) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name, name, strconv.Itoa(priority))
}

// NewDepthMetric implements workqueue.MetricsProvider, for a queue without
// priorities: its keys count at queue.NormalPriority.
func (m *queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.NewPriorityDepthMetric(name, queue.NormalPriority)
}

// NewAddsMetric implements workqueue.MetricsProvider.
func (m *queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name, name)
}

// NewLatencyMetric implements workqueue.MetricsProvider.
func (m *queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name, name)
}

// NewWorkDurationMetric implements workqueue.MetricsProvider.
func (m *queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name, name)
}

// NewUnfinishedWorkSecondsMetric implements workqueue.MetricsProvider.
func (m *queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name, name)
}

// NewLongestRunningProcessorSecondsMetric implements workqueue.MetricsProvider.
func (m *queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longestRunningProcessor.WithLabelValues(name, name)
}

// NewRetriesMetric implements workqueue.MetricsProvider.
func (m *queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name, name)
}
