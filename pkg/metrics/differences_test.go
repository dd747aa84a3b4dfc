package metrics_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/metrics"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// newQueue returns a queue named mirrors recording into a fresh registry,
// shut down when the test ends.
func newQueue(t *testing.T) (*queue.Queue[string], *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.NewQueueMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	q := queue.New(queue.Options[string]{Name: "mirrors", Metrics: m})
	t.Cleanup(q.ShutDown)
	return q, reg
}

// value returns the value of the one series of a counter or gauge family
// whose labels include want, or fails.
func value(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			n := 0
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok {
					if v != l.GetValue() {
						continue series
					}
					n++
				}
			}
			if n < len(want) {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, want)
	return 0
}

// TestDifferences checks the bullets of the package documentation's
// "Differences from client-go / controller-runtime", each subtest the
// bullet its entry in differences quotes.
func TestDifferences(t *testing.T) {
	t.Run("Labels", func(t *testing.T) {
		q, reg := newQueue(t)
		q.Add("a")
		k, _, _ := q.Get()
		q.Done(k)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for _, mf := range mfs {
			for _, l := range mf.GetMetric()[0].GetLabel() {
				got[mf.GetName()] = append(got[mf.GetName()], l.GetName()+"="+l.GetValue())
			}
			slices.Sort(got[mf.GetName()])
		}
		nc := []string{"controller=mirrors", "name=mirrors"}
		want := map[string][]string{
			"workqueue_depth":                             {"controller=mirrors", "name=mirrors", "priority=0"},
			"workqueue_adds_total":                        nc,
			"workqueue_queue_duration_seconds":            nc,
			"workqueue_work_duration_seconds":             nc,
			"workqueue_unfinished_work_seconds":           nc,
			"workqueue_longest_running_processor_seconds": nc,
			"workqueue_retries_total":                     nc,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
	})

	t.Run("DepthCountsReAddWhileProcessing", func(t *testing.T) {
		q, reg := newQueue(t)
		q.Add("a")
		k, _, _ := q.Get()
		q.Add("a") // while processing: queued again at Done
		depth := func() float64 {
			return value(t, reg, "workqueue_depth", map[string]string{"priority": "0"})
		}
		if got := depth(); got != 1 {
			t.Errorf("depth with a re-added while processing = %v, want 1", got)
		}
		if got := q.Len(); got != 0 {
			t.Errorf("Len = %d, want 0: Len counts ready keys only", got)
		}
		q.AddWithOpts(queue.AddOpts{Priority: 5}, "a") // raised while processing
		if got, got5 := depth(), value(t, reg, "workqueue_depth", map[string]string{"priority": "5"}); got != 0 || got5 != 1 {
			t.Errorf("depth after raising a to 5 = %v at 0, %v at 5; want 0, 1", got, got5)
		}
		q.Done(k)
		if got := value(t, reg, "workqueue_depth", map[string]string{"priority": "5"}); got != 1 {
			t.Errorf("depth at 5 after Done = %v, want 1", got)
		}
		if got := value(t, reg, "workqueue_adds_total", nil); got != 2 {
			t.Errorf("adds = %v, want 2", got)
		}
	})

	t.Run("DelayedReAddWhileProcessing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q, reg := newQueue(t)
			q.Add("a")
			k, _, _ := q.Get()
			q.AddAfter("a", time.Second)
			if got := value(t, reg, "workqueue_depth", map[string]string{"priority": "0"}); got != 0 {
				t.Errorf("depth with a re-added after 1s while processing = %v, want 0", got)
			}
			time.Sleep(2 * time.Second)
			if got := value(t, reg, "workqueue_depth", map[string]string{"priority": "0"}); got != 0 {
				t.Errorf("depth once the delay has passed, a still processing = %v, want 0 (until Done)", got)
			}
			if got := value(t, reg, "workqueue_adds_total", nil); got != 1 {
				t.Errorf("adds before Done = %v, want 1", got)
			}
			q.Done(k)
			if got := value(t, reg, "workqueue_depth", map[string]string{"priority": "0"}); got != 1 {
				t.Errorf("depth after Done = %v, want 1", got)
			}
			if got := value(t, reg, "workqueue_adds_total", nil); got != 2 {
				t.Errorf("adds after Done = %v, want 2", got)
			}
		})
	})

	t.Run("AddsCountWhenReady", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q, reg := newQueue(t)
			adds := func() float64 { return value(t, reg, "workqueue_adds_total", nil) }
			q.AddAfter("a", time.Second)
			q.AddAfter("b", time.Second)
			q.Add("b") // b is ready now: one add
			if got := adds(); got != 1 {
				t.Errorf("adds before the delay ends = %v, want 1 (b)", got)
			}
			time.Sleep(time.Second)
			synctest.Wait()
			if got := adds(); got != 2 {
				t.Errorf("adds after the delay = %v, want 2 (b, then a)", got)
			}
		})
	})

	t.Run("RetriesCountEveryDelayedAdd", func(t *testing.T) {
		q, reg := newQueue(t)
		q.AddAfter("a", 0)
		q.AddAfter("b", time.Hour)
		q.AddAfter("b", time.Hour) // de-duplicated, still a retry
		q.AddRateLimited("c")
		q.AddWithOpts(queue.AddOpts{RateLimited: true}, "d")
		q.AddWithOpts(queue.AddOpts{Priority: 1}, "e") // not a retry
		q.Add("f")                                     // nor this
		if got := value(t, reg, "workqueue_retries_total", nil); got != 5 {
			t.Errorf("retries = %v, want 5", got)
		}
		q.ShutDown()
		q.AddAfter("g", time.Second) // ignored: no retry
		if got := value(t, reg, "workqueue_retries_total", nil); got != 5 {
			t.Errorf("retries after an add ignored at shutdown = %v, want 5", got)
		}
	})

	t.Run("QueueDurationFromReady", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q, reg := newQueue(t)
			q.Add("a")
			k, _, _ := q.Get()
			q.Add("a")
			time.Sleep(2 * time.Second) // still processing
			q.Done(k)
			time.Sleep(time.Second) // due, not yet handed out
			k, _, _ = q.Get()
			q.Done(k)
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() == "workqueue_queue_duration_seconds" {
					h := mf.GetMetric()[0].GetHistogram()
					if h.GetSampleCount() != 2 || h.GetSampleSum() != 1 {
						t.Errorf("queue duration: %d samples summing to %vs, want 2 summing to 1s (0s, then 1s from Done)",
							h.GetSampleCount(), h.GetSampleSum())
					}
				}
			}
		})
	})

	t.Run("PriorityLabelUncapped", func(t *testing.T) {
		q, reg := newQueue(t)
		for p := range 30 {
			q.AddWithOpts(queue.AddOpts{Priority: p}, strings.Repeat("k", p+1))
		}
		if n, err := testutil.GatherAndCount(reg, "workqueue_depth"); err != nil || n != 30 {
			t.Errorf("depth series = %d (err %v), want 30, one per priority", n, err)
		}
	})

	t.Run("ClassicHistograms", func(t *testing.T) {
		q, reg := newQueue(t)
		q.Add("a")
		k, _, _ := q.Get()
		q.Done(k)
		cm, err := imetrics.NewControllerMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		cm.For("mirrors", 1).Time.Observe(0.5)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		queueBuckets := prometheus.ExponentialBuckets(10e-9, 10, 12)
		// controller-runtime v0.25's, from pkg/internal/controller/metrics.
		reconcileBuckets := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
			1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60}
		seen := 0
		for _, mf := range mfs {
			h := mf.GetMetric()[0].GetHistogram()
			if h == nil {
				continue
			}
			seen++
			want := queueBuckets
			if mf.GetName() == imetrics.ReconcileTime {
				want = reconcileBuckets
			}
			var got []float64
			for _, b := range h.GetBucket() {
				got = append(got, b.GetUpperBound())
			}
			if diff := cmp.Diff(want, got); diff != "" || h.GetSchema() != 0 || len(h.GetPositiveSpan()) != 0 {
				t.Errorf("%s: buckets (-want +got):\n%s; native schema %d", mf.GetName(), diff, h.GetSchema())
			}
		}
		if seen != 3 {
			t.Errorf("saw %d histograms, want 3", seen)
		}
	})
}

// differences quote, per subtest of TestDifferences, the words of the
// package documentation's bullet that the subtest checks.
var differences = map[string]string{
	"Labels":                          "Every workqueue series has name and controller",
	"DepthCountsReAddWhileProcessing": "workqueue_depth counts the keys ready to be handed out and the keys added again",
	"DelayedReAddWhileProcessing":     "A key added again with a delay while being processed joins",
	"AddsCountWhenReady":              "workqueue_adds_total counts each time a key becomes due",
	"RetriesCountEveryDelayedAdd":     "workqueue_retries_total counts every delayed add",
	"QueueDurationFromReady":          "workqueue_queue_duration_seconds measures from when a key became due",
	"PriorityLabelUncapped":           "workqueue_depth's priority label holds every priority used",
	"ClassicHistograms":               "The histograms have classic buckets only",
}

// Every bullet of the differences in doc.go is checked by a subtest of
// TestDifferences, and every such subtest by a bullet: the subtest's
// quote in differences is in the bullet.
func TestDifferencesDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	test, err := os.ReadFile("differences_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "// # Differences")
	if !ok {
		t.Fatal("doc.go has no Differences section")
	}
	var bullets []string
	for _, b := range strings.Split(section, "\n//   - ")[1:] {
		bullets = append(bullets, strings.Join(strings.Fields(strings.ReplaceAll(b, "\n//", " ")), " "))
	}
	checked := make([]bool, len(bullets))
	for _, m := range regexp.MustCompile(`t\.Run\("(\w+)"`).FindAllStringSubmatch(string(test), -1) {
		quote, ok := differences[m[1]]
		if !ok {
			t.Errorf("subtest %s quotes no bullet of doc.go: add it to differences", m[1])
			continue
		}
		i := slices.IndexFunc(bullets, func(b string) bool { return strings.Contains(b, quote) })
		if i < 0 {
			t.Errorf("no bullet of doc.go's differences says %q (subtest %s)", quote, m[1])
			continue
		}
		checked[i] = true
	}
	for i, b := range bullets {
		if !checked[i] {
			t.Errorf("no subtest of TestDifferences checks the bullet %q", b)
		}
	}
}
