package metrics_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/opkit-dev/opkit/pkg/metrics"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// Queue metrics go into the registry you pass, never a global one.
func ExampleNewQueueMetrics() {
	reg := prometheus.NewRegistry()
	m, err := metrics.NewQueueMetrics(reg)
	if err != nil {
		panic(err)
	}
	q := queue.New(queue.Options[string]{Name: "mirrors", Metrics: m})
	defer q.ShutDown()
	q.Add("platform/ca-bundle")

	n, _ := testutil.GatherAndCount(reg, "workqueue_adds_total")
	fmt.Println("series of workqueue_adds_total:", n)
	// Output: series of workqueue_adds_total: 1
}
