package autoscale

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/metrics"
)

// The Sampler measures only the named controllers, each window apart from
// the last, and its p99 is over the objective exactly when more than 1%
// of the window's waits are (1s is a bucket bound).
func TestSamplerMeasuresEachWindow(t *testing.T) {
	reg := prometheus.NewRegistry()
	qm, err := metrics.NewQueueMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := imetrics.NewControllerMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	rec := cm.For("sharded", 2)
	cm.For("other", 2).Time.Observe(100) // not measured
	wait := func(name string) workqueue.HistogramMetric { return qm.NewLatencyMetric(name) }
	s := &Sampler{Gatherer: reg, Controllers: func() []string { return []string{"sharded"} }}
	for range 98 {
		wait("sharded").Observe(0.01)
	}
	wait("sharded").Observe(5)
	wait("sharded").Observe(5)
	for range 100 {
		wait("other").Observe(50) // not measured
	}
	l, err := s.Sample(time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if l.QueueP99 <= time.Second {
		t.Errorf("2%% of waits at 5s: p99 = %v, want over 1s", l.QueueP99)
	}
	for range 99 {
		wait("sharded").Observe(0.01)
	}
	for range 4 {
		rec.Time.Observe(2.5) // 10 s of 2 workers' 20 s
	}
	wait("sharded").Observe(5)
	l, err = s.Sample(time.Unix(10, 0))
	if err != nil {
		t.Fatal(err)
	}
	if l.QueueP99 > time.Second {
		t.Errorf("the second window has 1%% of waits at 5s: p99 = %v, want within 1s", l.QueueP99)
	}
	if l.Busy != 0.5 || l.ReconcileMean != 2500*time.Millisecond {
		t.Errorf("4 reconciles of 2.5s by 2 workers in 10s: busy %v, mean %v; want 0.5 and 2.5s", l.Busy, l.ReconcileMean)
	}
	l, err = s.Sample(time.Unix(20, 0))
	if err != nil {
		t.Fatal(err)
	}
	if l.QueueP99 != 0 {
		t.Errorf("an empty window: p99 = %v, want 0", l.QueueP99)
	}
}

func TestLoadRoundTrip(t *testing.T) {
	in := Load{QueueP99: 1512 * time.Millisecond, ReconcileMean: 50 * time.Millisecond, Busy: 0.93, Depth: 12}
	out, err := ParseLoad(in.String())
	if err != nil || out != in {
		t.Errorf("ParseLoad(%q) = %+v, %v; want %+v", in.String(), out, err, in)
	}
	for _, bad := range []string{"", "q", "q=x", "q=-1"} {
		if _, err := ParseLoad(bad); err == nil {
			t.Errorf("ParseLoad(%q) = nil error", bad)
		}
	}
}

// A window in which keys stay queued and none is taken observes no wait,
// yet is no calm one: its p99 is at least how long the keys queued at
// the samples before, too many to have been taken since, have waited;
// keys that a worker's Done may hold (one a worker) and keys taken do
// not count.
func TestSamplerQueuedKeysNoneTakenBreach(t *testing.T) {
	reg := prometheus.NewRegistry()
	qm, err := metrics.NewQueueMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := imetrics.NewControllerMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cm.For("sharded", 2)
	depth := qm.NewDepthMetric("sharded")
	wait := qm.NewLatencyMetric("sharded")
	s := &Sampler{Gatherer: reg, Controllers: func() []string { return []string{"sharded"} }}
	sample := func(at int64) Load {
		t.Helper()
		l, err := s.Sample(time.Unix(at, 0))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for range 2 {
		depth.Inc() // as many as the workers: each may be a key added again while processed
	}
	sample(0)
	if l := sample(10); l.QueueP99 != 0 {
		t.Errorf("2 keys queued, 2 workers: p99 = %v, want 0 (each may wait for a Done, not a worker)", l.QueueP99)
	}
	for range 5 {
		depth.Inc() // 7 queued: at least 5 ready
	}
	if l := sample(20); l.QueueP99 != 0 {
		t.Errorf("keys first seen queued: p99 = %v, want 0", l.QueueP99)
	}
	if l := sample(30); l.QueueP99 != 10*time.Second {
		t.Errorf("5 ready keys queued since the last sample, none taken: p99 = %v, want 10s", l.QueueP99)
	}
	if l := sample(45); l.QueueP99 != 25*time.Second {
		t.Errorf("5 ready keys queued since two samples ago, none taken: p99 = %v, want 25s", l.QueueP99)
	}
	for range 3 {
		wait.Observe(0.001) // 3 taken, 3 more queued: 2 of the 5 left at least
		depth.Dec()
		depth.Inc()
	}
	if l := sample(50); l.QueueP99 != 30*time.Second {
		t.Errorf("2 of 5 keys queued since 30s ago left after 3 takes: p99 = %v, want 30s", l.QueueP99)
	}
	for range 3 {
		wait.Observe(0.001) // the oldest 2, then 1 of the 3 seen at 50
	}
	if l := sample(60); l.QueueP99 != 10*time.Second {
		t.Errorf("the keys queued since 30s ago taken, 2 of 3 since 50 left: p99 = %v, want 10s", l.QueueP99)
	}
	for range 5 {
		depth.Dec() // 2 queued: none need be ready
	}
	if l := sample(70); l.QueueP99 != 0 {
		t.Errorf("no more keys queued than workers: p99 = %v, want 0", l.QueueP99)
	}
}

// A p99 published in a report and read back compares with the objective
// as it was measured, whatever the objective's size: over it is a breach,
// within half of it may be calm.
func TestPublishedLoadKeepsItsBreach(t *testing.T) {
	for _, objective := range []time.Duration{time.Second, time.Millisecond, time.Microsecond} {
		p := Policy{Objective: objective, Min: 1, Max: 8, MaxStep: 4}
		long := State{Since: t0.Add(-time.Hour), RestingSince: t0.Add(-time.Hour)}
		for _, tc := range []struct {
			p99    time.Duration
			reason string
		}{
			{p99: objective * 14 / 10, reason: ReasonLatency},
			{p99: objective * 4 / 10, reason: ReasonWithin},
		} {
			read, err := ParseLoad(Load{QueueP99: tc.p99, Busy: 1}.String())
			if err != nil {
				t.Fatal(err)
			}
			in := Input{Now: t0, Replicas: 2, Loads: map[string]*Load{"a": &read, "b": {Busy: 1}}, Settled: true}
			if d, _ := Decide(p, in, long); d.Reason != tc.reason {
				t.Errorf("objective %v, a p99 of %v published as %q: %s; want %s", objective, tc.p99, Load{QueueP99: tc.p99}, d.Reason, tc.reason)
			}
		}
	}
}
