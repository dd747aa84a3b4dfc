package source_test

import (
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/internal/informerlag"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/internal/wallclock"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// BenchmarkLagPath is the per-event work of the lag metrics without an
// informer, on one goroutine, so that it is steadier than
// BenchmarkInformerUpdates on a busy machine: each op ingests an update
// through the cache's transform, delivers it through the cache's handler
// wrapper to a source, and has a worker get and finish its key, with the
// lag metrics on (on) and off (off). Their difference is what the lag
// metrics cost an event.
func BenchmarkLagPath(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchLagPath(b, false) })
	b.Run("on", func(b *testing.B) { benchLagPath(b, true) })
}

func benchLagPath(b *testing.B, on bool) {
	const n = 1000
	written := metav1.Now()
	var slabs [2][n]corev1.ConfigMap
	for s := range slabs {
		for i := range n {
			cm := &slabs[s][i]
			cm.Namespace, cm.Name, cm.ResourceVersion = "ns", "obj-"+strconv.Itoa(i), strconv.Itoa(s+1)
			cm.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "bench", Time: &written}}
		}
	}
	ctx := b.Context()
	q := queue.New(queue.Options[reconcile.Request]{})
	defer q.ShutDown()
	var e2e prometheus.Observer
	ingest := func(obj any) (any, error) { return obj, nil }
	wrap := func(h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler { return h }
	if on {
		lag, err := imetrics.NewEventLag(prometheus.NewRegistry())
		if err != nil {
			b.Fatal(err)
		}
		e2e = lag.Controller.WithLabelValues("bench")
		ctx = source.WithLag(ctx, source.Lag{
			Queued:  func(typ string) func(float64) { return lag.Source.WithLabelValues("bench", typ).Observe },
			Changes: true,
		})
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: imetrics.CacheEventLag, Buckets: imetrics.LagBuckets}, []string{"type", "event"})
		tr := informerlag.New(informerlag.Observers{Update: h.WithLabelValues("v1/ConfigMap", "update").Observe})
		ingest = tr.Transform(ingest)
		wrap = func(h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler { return tr.Handler(h) }
	}
	inf := newFakeInformer()
	if err := source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap]()).Start(ctx, q); err != nil {
		b.Fatal(err)
	}
	h := wrap(inf.events())
	var clock wallclock.Clock
	i := 0
	for b.Loop() {
		j, s := i%n, i/n%2
		i++
		newObj, _ := ingest(&slabs[s][j])
		h.OnUpdate(&slabs[1-s][j], newObj)
		k, _, changed, _ := q.GetChanged()
		if e2e != nil && !changed.IsZero() {
			e2e.Observe(clock.Now().Sub(changed).Seconds())
		}
		q.Done(k)
	}
}
