package queue

import (
	"time"

	"k8s.io/client-go/util/workqueue"
)

// PriorityDepthProvider is a workqueue.MetricsProvider, given as
// Options.Metrics, that also splits workqueue_depth by priority. With a
// provider that does not, the queue asks NewDepthMetric for one gauge and
// counts every priority's keys in it. Package metrics's provider splits.
type PriorityDepthProvider interface {
	// NewPriorityDepthMetric returns the gauge of the keys due at one
	// priority. It is called the first time a priority is seen, and may be
	// called again for it; it must then return the same gauge.
	NewPriorityDepthMetric(name string, priority int) workqueue.GaugeMetric
}

// newDepthMetric returns what gives a priority its depth gauge: the
// priority's own if p splits depth by priority, else one shared gauge.
func newDepthMetric(name string, p workqueue.MetricsProvider) func(priority int) workqueue.GaugeMetric {
	if pp, ok := p.(PriorityDepthProvider); ok {
		return func(priority int) workqueue.GaugeMetric { return pp.NewPriorityDepthMetric(name, priority) }
	}
	g := p.NewDepthMetric(name)
	return func(int) workqueue.GaugeMetric { return g }
}

// unfinishedWorkUpdatePeriod is how often the unfinished-work and
// longest-running-processor gauges are updated, as in client-go.
const unfinishedWorkUpdatePeriod = 500 * time.Millisecond

// queueMetrics is the queue's set of metrics; its zero value (on false) does
// nothing.
type queueMetrics struct {
	on           bool
	adds         workqueue.CounterMetric
	retries      workqueue.CounterMetric
	latency      workqueue.HistogramMetric
	workDuration workqueue.HistogramMetric
	unfinished   workqueue.SettableGaugeMetric
	longest      workqueue.SettableGaugeMetric
}

func newQueueMetrics(name string, p workqueue.MetricsProvider) queueMetrics {
	return queueMetrics{
		on:           true,
		adds:         p.NewAddsMetric(name),
		retries:      p.NewRetriesMetric(name),
		latency:      p.NewLatencyMetric(name),
		workDuration: p.NewWorkDurationMetric(name),
		unfinished:   p.NewUnfinishedWorkSecondsMetric(name),
		longest:      p.NewLongestRunningProcessorSecondsMetric(name),
	}
}

// metricsLoop updates the in-flight gauges every unfinishedWorkUpdatePeriod
// until ShutDown.
func (q *Queue[K]) metricsLoop() {
	for {
		t := q.clock.NewTimer(unfinishedWorkUpdatePeriod)
		more := q.sleepUntil(t.C())
		t.Stop()
		if !more {
			return
		}
		q.updateUnfinishedWork()
	}
}

func (q *Queue[K]) sleepUntil(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	case <-q.stop:
		return false
	}
}

func (q *Queue[K]) updateUnfinishedWork() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	var total, longest time.Duration
	for _, n := range q.processing {
		d := time.Duration(now - n.at)
		total += d
		longest = max(longest, d)
	}
	q.metrics.unfinished.Set(total.Seconds())
	q.metrics.longest.Set(longest.Seconds())
}
