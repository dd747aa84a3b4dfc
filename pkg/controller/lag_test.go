package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// histogram returns the histogram called name in reg whose labels include
// every pair of match, or nil.
func histogram(t *testing.T, reg *prometheus.Registry, name string, match map[string]string) *dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if labels[k] != v {
					continue metric
				}
			}
			return m.GetHistogram()
		}
	}
	return nil
}

// cumulative returns the count of h's bucket whose upper bound is le.
func cumulative(t *testing.T, h *dto.Histogram, le float64) uint64 {
	t.Helper()
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == le {
			return b.GetCumulativeCount()
		}
	}
	t.Fatalf("no bucket le=%v", le)
	return 0
}

// The lag histograms observe every event of a small workload with
// plausible values, and a reconcile held up behind another one shows its
// wait in the end-to-end histogram: key b, created while the single worker
// is held by key a for held (by the test's clock), is reconciled at least
// held after its change, so it lies in a bucket above held's lower bound.
// (Without spares: a spare may take a, which leaves the worker free for b.)
func TestEventLag(t *testing.T) {
	w := newWorld(t)
	// The cache keeps the change times only with metrics on.
	var err error
	if w.cache, err = cache.New(env.Config(), cache.Options{Namespaces: []string{w.ns}, Registerer: w.reg}); err != nil {
		t.Fatal(err)
	}
	if w.cms, err = cache.Register[*corev1.ConfigMap](w.cache, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	const held = 2600 * time.Millisecond // the bucket (2.5, 5] holds it
	started, release := make(chan string, 4), make(chan struct{})
	r := reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		started <- req.Name
		if req.Name == "a" {
			<-release
		}
		return reconcile.Done(), nil
	})
	c, err := controller.New("lag", reconcile.Reconciler[reconcile.Request](r), controller.Options[reconcile.Request]{Registerer: w.reg, MaxConcurrentReconciles: 1, SpareWorkers: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(source.NewKind(w.cms, source.EnqueueObject[*corev1.ConfigMap]())); err != nil {
		t.Fatal(err)
	}
	w.run(t, c)
	if err := w.cache.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}

	w.create(t, "a", nil, nil)
	if got := <-started; got != "a" {
		t.Fatalf("first reconcile of %q, want a", got)
	}
	w.create(t, "b", nil, nil)
	created := time.Now() // b changed at the API server before this
	eventually(t, "b queued", func() bool { return c.Queue().Len() == 1 })
	time.Sleep(time.Until(created.Add(held))) // the delay under test, not a wait for something
	close(release)
	if got := <-started; got != "b" {
		t.Fatalf("second reconcile of %q, want b", got)
	}
	eventually(t, "both reconciles observed", func() bool {
		h := histogram(t, w.reg, imetrics.ControllerEventLag, map[string]string{"controller": "lag"})
		return h != nil && h.GetSampleCount() == 2
	})

	e2e := histogram(t, w.reg, imetrics.ControllerEventLag, map[string]string{"controller": "lag"})
	// a waited for nothing: under 2.5s (the change time is up to 1s early).
	// b waited at least held, so it is above the bucket le=2.5.
	if below := cumulative(t, e2e, 2.5); below != 1 {
		t.Errorf("%s: %d observations up to 2.5s, want 1 (a's); b was held %v", imetrics.ControllerEventLag, below, held)
	}
	if e2e.GetSampleSum() < held.Seconds() {
		t.Errorf("%s: sum %vs, want at least b's %v", imetrics.ControllerEventLag, e2e.GetSampleSum(), held)
	}

	for _, tc := range []struct {
		name  string
		match map[string]string
	}{
		{imetrics.CacheEventLag, map[string]string{"type": "v1/ConfigMap", "event": "add"}},
		{imetrics.SourceEventLag, map[string]string{"controller": "lag", "type": "v1/ConfigMap"}},
	} {
		h := histogram(t, w.reg, tc.name, tc.match)
		if h == nil {
			t.Errorf("%s%v: no series", tc.name, tc.match)
			continue
		}
		// Two creates, no initial list (the namespace was empty), all
		// under a minute.
		if h.GetSampleCount() != 2 || cumulative(t, h, 60) != 2 || h.GetSampleSum() < 0 {
			t.Errorf("%s%v: count %d, %d up to 60s, sum %v; want 2 events under 60s", tc.name, tc.match,
				h.GetSampleCount(), cumulative(t, h, 60), h.GetSampleSum())
		}
	}
}
