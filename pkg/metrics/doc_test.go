package metrics_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/metrics"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// Every metric doc.go names exists, and where it gives a label set in
// braces the series carries exactly those labels.
func TestDocNamesMetricsThatExist(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	qm, err := metrics.NewQueueMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := imetrics.NewControllerMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cm.For("c", 1).Time.Observe(1)
	lag, err := imetrics.NewEventLag(reg)
	if err != nil {
		t.Fatal(err)
	}
	lag.Source.WithLabelValues("c", "v1/ConfigMap").Observe(1)
	lag.Controller.WithLabelValues("c").Observe(1)
	q := queue.New(queue.Options[string]{Name: "c", Metrics: qm})
	defer q.ShutDown()
	q.Add("a")
	k, _, _ := q.Get()
	q.Done(k)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string][]string{}
	for _, mf := range mfs {
		var names []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			names = append(names, l.GetName())
		}
		labels[mf.GetName()] = names
	}
	text := strings.ReplaceAll(string(doc), "\n//", "")
	named := regexp.MustCompile(`\b((?:workqueue|controller_runtime|opkit_source|opkit_controller)_[a-z_]*[a-z])(\{[a-z,]+\})?`).FindAllStringSubmatch(text, -1)
	if len(named) == 0 {
		t.Fatal("doc.go names no metric")
	}
	for _, m := range named {
		got, ok := labels[m[1]]
		if !ok {
			t.Errorf("doc.go names %s, which does not exist", m[1])
			continue
		}
		if m[2] == "" {
			continue
		}
		want := strings.Split(strings.Trim(m[2], "{}"), ",")
		slices.Sort(want)
		if !slices.Equal(want, got) {
			t.Errorf("doc.go says %s%s; its labels are %v", m[1], m[2], got)
		}
	}
}
