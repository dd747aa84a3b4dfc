package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/opkit-dev/opkit/pkg/queue"
)

func TestQueueMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewQueueMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	q := queue.New(queue.Options[string]{Name: "mirrors", Metrics: m})
	defer q.ShutDown()
	q.Add("a")
	q.AddWithOpts(queue.AddOpts{Priority: queue.LowPriority}, "b")
	q.AddAfter("c", 1e12) // counts as an add when its delay ends
	k, _, _ := q.Get()
	q.Done(k)

	want := `
# HELP workqueue_adds_total Total number of adds handled by workqueue
# TYPE workqueue_adds_total counter
workqueue_adds_total{controller="mirrors",name="mirrors"} 2
# HELP workqueue_depth Current depth of workqueue by workqueue and priority
# TYPE workqueue_depth gauge
workqueue_depth{controller="mirrors",name="mirrors",priority="-100"} 1
workqueue_depth{controller="mirrors",name="mirrors",priority="0"} 0
# HELP workqueue_retries_total Total number of retries handled by workqueue
# TYPE workqueue_retries_total counter
workqueue_retries_total{controller="mirrors",name="mirrors"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"workqueue_adds_total", "workqueue_depth", "workqueue_retries_total"); err != nil {
		t.Error(err)
	}
	for name, want := range map[string]int{
		"workqueue_queue_duration_seconds":            1,
		"workqueue_work_duration_seconds":             1,
		"workqueue_unfinished_work_seconds":           1,
		"workqueue_longest_running_processor_seconds": 1,
	} {
		if got, err := testutil.GatherAndCount(reg, name); err != nil || got != want {
			t.Errorf("%s: %d series (err %v), want %d", name, got, err, want)
		}
	}
}

// Two queues built on one registry share its collectors; a collector of
// the same name and another shape is an error.
func TestQueueMetricsShareARegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	m1, err := NewQueueMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := NewQueueMetrics(reg)
	if err != nil {
		t.Fatalf("second NewQueueMetrics on one registry: %v", err)
	}
	m1.NewAddsMetric("a").Inc()
	m2.NewAddsMetric("b").Inc()
	m2.NewAddsMetric("b").Inc()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP workqueue_adds_total Total number of adds handled by workqueue
# TYPE workqueue_adds_total counter
workqueue_adds_total{controller="a",name="a"} 1
workqueue_adds_total{controller="b",name="b"} 2
`), "workqueue_adds_total"); err != nil {
		t.Error(err)
	}

	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "workqueue_depth", Help: "not a queue's"}))
	if _, err := NewQueueMetrics(other); err == nil || !strings.Contains(err.Error(), "register queue metrics") {
		t.Errorf("NewQueueMetrics beside a conflicting collector: err = %v, want a registration error", err)
	}
}
