package queue

import "time"

// MetricsProvider makes the metrics of a queue. Its metrics have the names and
// meanings of client-go's workqueue metrics, so dashboards built for those
// work unchanged; depth is also split by priority. Package metrics lists
// where the meanings differ, in its "Differences from client-go /
// controller-runtime". The method set is client-go's
// workqueue.MetricsProvider but for NewDepthMetric, which takes the
// priority. Prometheus's Gauge, Counter and Histogram satisfy the metric
// interfaces; package metrics has a ready-made provider.
type MetricsProvider interface {
	// NewDepthMetric returns the gauge of the keys due at one priority
	// (workqueue_depth): ready keys, and keys added again without a delay
	// while being processed. It is called the first time a priority is
	// seen, and may be called again for it; it must then return the same
	// gauge.
	NewDepthMetric(name string, priority int) GaugeMetric
	// NewAddsMetric counts the times a key became due: added without a
	// delay, added again while being processed, or its delay ended
	// (workqueue_adds_total).
	NewAddsMetric(name string) CounterMetric
	// NewLatencyMetric observes the seconds a key was ready before Get
	// handed it out (workqueue_queue_duration_seconds).
	NewLatencyMetric(name string) HistogramMetric
	// NewWorkDurationMetric observes the seconds from Get to Done
	// (workqueue_work_duration_seconds).
	NewWorkDurationMetric(name string) HistogramMetric
	// NewUnfinishedWorkSecondsMetric is set to the seconds of work in flight
	// (workqueue_unfinished_work_seconds).
	NewUnfinishedWorkSecondsMetric(name string) SettableGaugeMetric
	// NewLongestRunningProcessorSecondsMetric is set to the age of the oldest
	// work in flight (workqueue_longest_running_processor_seconds).
	NewLongestRunningProcessorSecondsMetric(name string) SettableGaugeMetric
	// NewRetriesMetric counts AddAfter and AddRateLimited calls, and
	// AddWithOpts keys with After or RateLimited set, whatever the delay
	// (workqueue_retries_total).
	NewRetriesMetric(name string) CounterMetric
}

// GaugeMetric goes up and down by one.
type GaugeMetric interface {
	Inc()
	Dec()
}

// SettableGaugeMetric is set to a value.
type SettableGaugeMetric interface {
	Set(float64)
}

// CounterMetric counts.
type CounterMetric interface {
	Inc()
}

// HistogramMetric observes values.
type HistogramMetric interface {
	Observe(float64)
}

// unfinishedWorkUpdatePeriod is how often the unfinished-work and
// longest-running-processor gauges are updated, as in client-go.
const unfinishedWorkUpdatePeriod = 500 * time.Millisecond

// queueMetrics is the queue's set of metrics; its zero value (on false) does
// nothing.
type queueMetrics struct {
	on           bool
	adds         CounterMetric
	retries      CounterMetric
	latency      HistogramMetric
	workDuration HistogramMetric
	unfinished   SettableGaugeMetric
	longest      SettableGaugeMetric
}

func newQueueMetrics(name string, p MetricsProvider) queueMetrics {
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
