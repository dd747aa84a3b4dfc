package source_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// timedInformer hands its handlers that implement cache.TimedEventHandler
// each event with a change time, as pkg/cache does with its metrics on
// (here the delivery time: the benchmark's objects carry no timestamps).
// The cache's own part of the cost, remembering each object's timestamps
// and observing opkit_cache_event_lag_seconds, is measured by pkg/cache's
// BenchmarkEventLagStamps.
type timedInformer struct {
	toolscache.SharedIndexInformer
}

func (t timedInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	if th, ok := h.(cache.TimedEventHandler); ok {
		h = toolscache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(obj any, initial bool) { th.OnAddAt(obj, initial, time.Now()) },
			UpdateFunc: func(oldObj, newObj any) { th.OnUpdateAt(oldObj, newObj, time.Now()) },
			DeleteFunc: func(obj any) { th.OnDeleteAt(obj, time.Now()) },
		}
	}
	return t.SharedIndexInformer.AddEventHandler(h)
}

// opkitLagSink is opkitSink with the lag metrics on, as a manager keeps
// them: the cache's lag listener observes each event; the source times
// each event into opkit_source_event_lag_seconds and records each key's
// change time, which the worker takes at Get and observes into
// opkit_controller_event_lag_seconds.
func opkitLagSink(b *testing.B, ctx context.Context, inf toolscache.SharedIndexInformer, seen chan<- struct{}) func() {
	lag, err := imetrics.NewEventLag(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	changes := source.NewChangeTimes[reconcile.Request]()
	e2e := lag.Controller.WithLabelValues("bench")
	ctx = source.WithLag(ctx, source.Lag[reconcile.Request]{
		Queued:  func(typ string) func(float64) { return lag.Source.WithLabelValues("bench", typ).Observe },
		Changes: changes,
	})
	// The cache's own listener, which observes opkit_cache_event_lag_seconds
	// once per event: one more listener for the informer to feed.
	cacheLag := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cache_lag", Buckets: imetrics.LagBuckets})
	epoch := time.Now()
	observe := func() { cacheLag.Observe(time.Since(epoch).Seconds()) } // one clock reading, as the cache's
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(any, bool) { observe() },
		UpdateFunc: func(any, any) { observe() },
		DeleteFunc: func(any) { observe() },
	}); err != nil {
		b.Fatal(err)
	}
	q := queue.New[reconcile.Request](queue.Options[reconcile.Request]{})
	src := source.NewInformer(timedInformer{inf}, source.EnqueueObject[*corev1.ConfigMap]())
	if err := src.Start(ctx, q); err != nil {
		b.Fatal(err)
	}
	if err := src.WaitForSync(ctx); err != nil {
		b.Fatal(err)
	}
	sentinel := reconcile.Request{Namespace: sentinelNS, Name: sentinelName}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			k, _, shutdown := q.Get()
			if shutdown {
				return
			}
			if t, ok := changes.Take(k); ok {
				e2e.Observe(time.Since(t).Seconds())
			}
			if k == sentinel {
				seen <- struct{}{}
			}
			q.Done(k)
		}
	})
	return func() { q.ShutDown(); wg.Wait() }
}
