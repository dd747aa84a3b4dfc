package source_test

import (
	"context"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	ctrlsource "sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/opkit-dev/opkit/internal/informer"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/internal/wallclock"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// cacheLag is what pkg/cache has its informers observe with metrics on
// (Options.Registerer, which a manager always sets), through the cache's
// own code: the informer dates each event from the object's timestamps
// at ingest, observes opkit_cache_event_lag_seconds and hands a
// informer.TimedEventHandler the event's change time.
func cacheLag() *informer.Lag {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: imetrics.CacheEventLag, Buckets: imetrics.LagBuckets}, []string{"type", "event"})
	o := func(event string) func(float64) { return h.WithLabelValues("v1/ConfigMap", event).Observe }
	return &informer.Lag{Add: o("add"), Update: o("update"), Delete: o("delete")}
}

// opkitLagSink is opkitSink with the lag metrics on, as a manager keeps
// them, over an informer with cacheLag: the cache observes each event's lag; the
// source times each event into opkit_source_event_lag_seconds and queues
// each key with its change time, which the worker gets with the key and
// observes into opkit_controller_event_lag_seconds.
func opkitLagSink(b *testing.B, ctx context.Context, inf toolscache.SharedIndexInformer, seen chan<- struct{}) func() {
	lag, err := imetrics.NewEventLag(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	e2e := lag.Controller.WithLabelValues("bench")
	ctx = source.WithLag(ctx, source.Lag{
		Queued:  func(typ string) func(float64) { return lag.Source.WithLabelValues("bench", typ).Observe },
		Changes: true,
	})
	q := queue.New[reconcile.Request](queue.Options[reconcile.Request]{})
	src := source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap]())
	if err := src.Start(ctx, q); err != nil {
		b.Fatal(err)
	}
	if err := src.WaitForSync(ctx); err != nil {
		b.Fatal(err)
	}
	sentinel := reconcile.Request{Namespace: sentinelNS, Name: sentinelName}
	var clock wallclock.Clock // as a controller dates its reconciles
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			k, _, changed, shutdown := q.GetChanged()
			if shutdown {
				return
			}
			if !changed.IsZero() {
				e2e.Observe(clock.Now().Sub(changed).Seconds())
			}
			if k == sentinel {
				seen <- struct{}{}
			}
			q.Done(k)
		}
	})
	return func() { q.ShutDown(); wg.Wait() }
}

// defaultSink is opkit as a manager configures a controller by default,
// over an informer with cacheLag: a controller.Controller with a Registerer (its
// reconcile, workqueue and lag metrics on), read-your-writes on, tracing
// off, one worker and a Reconciler that does nothing.
func defaultSink(b *testing.B, ctx context.Context, inf toolscache.SharedIndexInformer, seen chan<- struct{}) func() {
	sentinel := reconcile.Request{Namespace: sentinelNS, Name: sentinelName}
	r := reconcile.Func[reconcile.Request](func(_ context.Context, k reconcile.Request) (reconcile.Result, error) {
		if k == sentinel {
			seen <- struct{}{}
		}
		return reconcile.Done(), nil
	})
	c, err := controller.New("bench", r, controller.Options[reconcile.Request]{
		Registerer: prometheus.NewRegistry(),
		Logger:     logr.New(nopSink{}),
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Watch(source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap]())); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := c.Start(ctx); err != nil {
			b.Error(err)
		}
	})
	return func() { cancel(); wg.Wait() }
}

// ctrlRuntimeDefaultSink is defaultSink's peer: controller-runtime's
// controller as its manager configures one by default (its priority
// queue, its reconcile and workqueue metrics in its global registry), with
// one worker and a Reconciler that does nothing, fed by its
// source.Informer with handler.EnqueueRequestForObject.
func ctrlRuntimeDefaultSink(b *testing.B, ctx context.Context, inf toolscache.SharedIndexInformer, seen chan<- struct{}) func() {
	sentinel := ctrlreconcile.Request{}
	sentinel.Namespace, sentinel.Name = sentinelNS, sentinelName
	r := ctrlreconcile.Func(func(_ context.Context, k ctrlreconcile.Request) (ctrlreconcile.Result, error) {
		if k == sentinel {
			seen <- struct{}{}
		}
		return ctrlreconcile.Result{}, nil
	})
	skip := true
	c, err := ctrlcontroller.NewUnmanaged("bench", ctrlcontroller.Options{
		Reconciler:         r,
		SkipNameValidation: &skip, // one per benchmark run, under one name
		Logger:             logr.New(nopSink{}),
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Watch(&ctrlsource.Informer{Informer: inf, Handler: &handler.EnqueueRequestForObject{}}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := c.Start(ctx); err != nil {
			b.Error(err)
		}
	})
	return func() { cancel(); wg.Wait() }
}

// nopSink is a logger that keeps nothing and formats nothing, so that the
// rows through a controller measure the controllers, not a log encoder:
// each gives its reconciles a logger with their key, which an encoder such
// as funcr's or zap's formats at once.
type nopSink struct{}

func (nopSink) Init(logr.RuntimeInfo)            {}
func (nopSink) Enabled(int) bool                 { return false }
func (nopSink) Info(int, string, ...any)         {}
func (nopSink) Error(error, string, ...any)      {}
func (s nopSink) WithValues(...any) logr.LogSink { return s }
func (s nopSink) WithName(string) logr.LogSink   { return s }
