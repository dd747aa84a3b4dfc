package queue

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/util/workqueue"
)

// fakeMetrics records every metric by name so tests can read them.
type fakeMetrics struct {
	mu     sync.Mutex
	values map[string]float64
	obs    map[string][]float64
}

func newFakeMetrics() *fakeMetrics {
	return &fakeMetrics{values: map[string]float64{}, obs: map[string][]float64{}}
}

type fakeMetric struct {
	f    *fakeMetrics
	name string
}

func (m fakeMetric) Inc()          { m.f.change(m.name, 1) }
func (m fakeMetric) Dec()          { m.f.change(m.name, -1) }
func (m fakeMetric) Set(v float64) { m.f.set(m.name, v) }
func (m fakeMetric) Observe(v float64) {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	m.f.obs[m.name] = append(m.f.obs[m.name], v)
}

func (f *fakeMetrics) change(name string, d float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.values[name] += d
}

func (f *fakeMetrics) set(name string, v float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.values[name] = v
}

func (f *fakeMetrics) snapshot() (map[string]float64, map[string][]float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := map[string]float64{}
	for k, x := range f.values {
		v[k] = x
	}
	o := map[string][]float64{}
	for k, x := range f.obs {
		o[k] = append([]float64(nil), x...)
	}
	return v, o
}

func (f *fakeMetrics) metric(name string) fakeMetric {
	f.set(name, 0) // initialised to zero up front, as a real provider is
	return fakeMetric{f, name}
}

func (f *fakeMetrics) NewPriorityDepthMetric(name string, p int) workqueue.GaugeMetric {
	return f.metric(fmt.Sprintf("%s/depth/%d", name, p))
}
func (f *fakeMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return f.metric(name + "/depth")
}
func (f *fakeMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return f.metric(name + "/adds")
}
func (f *fakeMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return f.metric(name + "/latency")
}
func (f *fakeMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return f.metric(name + "/work")
}
func (f *fakeMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return f.metric(name + "/unfinished")
}
func (f *fakeMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return f.metric(name + "/longest")
}
func (f *fakeMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return f.metric(name + "/retries")
}

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newFakeMetrics()
		q := newQueue(t, Options[string]{Name: "q", Metrics: m})
		q.Add("a")
		q.Add("a") // de-duplicated: not an add
		q.AddWithOpts(AddOpts{Priority: LowPriority}, "b")
		q.AddAfter("c", time.Second)
		synctest.Wait()
		values, _ := m.snapshot()
		want := map[string]float64{
			// c counts as an add when its delay ends, as in client-go.
			"q/adds": 2, "q/retries": 1, "q/depth/0": 1, "q/depth/-100": 1,
			"q/latency": 0, "q/work": 0, "q/unfinished": 0, "q/longest": 0,
		}
		if diff := cmp.Diff(want, values); diff != "" {
			t.Fatalf("after adds (-want +got):\n%s", diff)
		}

		time.Sleep(2 * time.Second) // a waited 2s, c 1s
		a, _, _ := q.Get()
		time.Sleep(3 * time.Second) // a is processed for 3s
		q.Done(a)
		time.Sleep(time.Second) // c has now waited 3s
		c, _, _ := q.Get()
		time.Sleep(2 * time.Second) // c in flight for 2s when the gauges update
		synctest.Wait()
		values, obs := m.snapshot()
		if diff := cmp.Diff([]float64{2, 5}, obs["q/latency"]); diff != "" {
			t.Errorf("queue latency seconds (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]float64{3}, obs["q/work"]); diff != "" {
			t.Errorf("work duration seconds (-want +got):\n%s", diff)
		}
		if values["q/adds"] != 3 {
			t.Errorf("adds = %v, want 3: c's delay has ended", values["q/adds"])
		}
		if values["q/depth/0"] != 0 || values["q/depth/-100"] != 1 {
			t.Errorf("depth = %v / %v, want 0 / 1", values["q/depth/0"], values["q/depth/-100"])
		}
		// The gauges update every 500ms: c has been in flight 2s.
		if values["q/unfinished"] != 2 || values["q/longest"] != 2 {
			t.Errorf("unfinished %v, longest %v; want 2, 2", values["q/unfinished"], values["q/longest"])
		}
		q.Done(c)
	})
}

// clientGoMetrics is a provider with only client-go's methods: it does not
// split depth by priority.
type clientGoMetrics struct{ workqueue.MetricsProvider }

// A client-go workqueue.MetricsProvider works as Options.Metrics; its one
// depth gauge counts the keys of every priority.
func TestMetricsDepthUnsplit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newFakeMetrics()
		q := newQueue(t, Options[string]{Name: "q", Metrics: clientGoMetrics{m}})
		q.Add("a")
		q.AddWithOpts(AddOpts{Priority: LowPriority}, "b")
		q.AddWithOpts(AddOpts{Priority: 7}, "c")
		k, _, _ := q.Get()
		synctest.Wait()
		values, _ := m.snapshot()
		want := map[string]float64{
			"q/adds": 3, "q/retries": 0, "q/depth": 2,
			"q/latency": 0, "q/work": 0, "q/unfinished": 0, "q/longest": 0,
		}
		if diff := cmp.Diff(want, values); diff != "" {
			t.Errorf("after three adds and a Get (-want +got):\n%s", diff)
		}
		q.Done(k)
	})
}
