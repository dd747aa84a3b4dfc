package source_test

// The event path side by side with controller-runtime's, in one run so that
// the ratio means something on a noisy machine. Each row is named
// Benchmark<Workload>/<impl>, impl one of:
//
//   - opkitlag: an Informer source with EnqueueObject into a queue.Queue,
//     with the lag metrics on as a manager keeps them (see opkitLagSink):
//     the source path as a manager runs it by default.
//   - opkit: the same with the lag metrics off, which no manager does.
//   - opkitlagloaded, opkitloaded: opkitlag and opkit beside another
//     process that keeps every core busy (see withLoad).
//   - ctrlruntime: controller-runtime's source.Informer with
//     handler.EnqueueRequestForObject into its priority queue.
//   - default: opkit through a controller.Controller exactly as a manager
//     configures one by default (metrics, lag and read-your-writes on,
//     tracing off; see defaultSink).
//   - ctrlruntimedefault: its peer, controller-runtime's controller as its
//     manager configures one by default (see ctrlRuntimeDefaultSink).
//   - controller, controllertraced: opkit through a controller.Controller
//     without metrics or read-your-writes, tracing off and on (see
//     controllerSink).
//
// Each listens to the informer its cache would give it, fed by an
// in-memory ListerWatcher: opkit's rows to pkg/cache's (internal/informer,
// which calls a source's handler on its delivery goroutine), with the
// cache's lag metrics where the row has them, controller-runtime's to
// client-go's SharedIndexInformer. Every queue is drained by one worker
// (Get, Done). Every row reports ns/event (wall), cpu-ns/event and allocs/event,
// the informer's own work included; 'make bench' runs them and hack/benchtable prints the
// ratios.

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	ctrlsource "sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/opkit-dev/opkit/internal/informer"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

const (
	benchUpdates    = 100_000 // watch updates per op
	benchObjects    = 1_000   // distinct objects they update, round-robin
	benchNamespaces = 10
	sentinelNS      = "bench"
	sentinelName    = "end" // updated last in every op; its key ends the op
)

// sink is one implementation under test: start attaches it to inf and
// starts a worker that drains its queue and sends on seen whenever it gets
// the sentinel's key. The returned function stops the worker and queue.
type sink func(b *testing.B, ctx context.Context, inf toolscache.SharedIndexInformer, seen chan<- struct{}) (stop func())

func BenchmarkInformerUpdates(b *testing.B) {
	// opkit with the lag metrics on, as a controller with a Registerer
	// keeps them, and off: the cost of measuring lag is their difference.
	b.Run("opkitlag", func(b *testing.B) { benchInformer(b, opkitLagSink, opkitInformerLag) })
	b.Run("opkit", func(b *testing.B) { benchInformer(b, opkitSink, opkitInformer) })
	// The same two with every core kept busy by another process: the
	// cost of measuring lag on a busy node, where a goroutine may be
	// descheduled anywhere on the path.
	b.Run("opkitlagloaded", func(b *testing.B) { withLoad(b); benchInformer(b, opkitLagSink, opkitInformerLag) })
	b.Run("opkitloaded", func(b *testing.B) { withLoad(b); benchInformer(b, opkitSink, opkitInformer) })
	b.Run("ctrlruntime", func(b *testing.B) { benchInformer(b, ctrlRuntimeSink, clientGoInformer) })
	b.Run("default", func(b *testing.B) { benchInformer(b, defaultSink, opkitInformerLag) })
	b.Run("ctrlruntimedefault", func(b *testing.B) { benchInformer(b, ctrlRuntimeDefaultSink, clientGoInformer) })
	// Through a controller, with tracing off (the default) and on: the
	// cost of tracing is their difference (see controllerSink).
	b.Run("controller", func(b *testing.B) { benchInformer(b, controllerSink(tracingOff), opkitInformer) })
	b.Run("controllertraced", func(b *testing.B) { benchInformer(b, controllerSink(tracingOn), opkitInformer) })
}

func opkitSink(b *testing.B, ctx context.Context, inf toolscache.SharedIndexInformer, seen chan<- struct{}) func() {
	q := queue.New[reconcile.Request](queue.Options[reconcile.Request]{})
	src := source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap]())
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
			if k == sentinel {
				seen <- struct{}{}
			}
			q.Done(k)
		}
	})
	return func() { q.ShutDown(); wg.Wait() }
}

func ctrlRuntimeSink(b *testing.B, ctx context.Context, inf toolscache.SharedIndexInformer, seen chan<- struct{}) func() {
	q := priorityqueue.New[ctrlreconcile.Request]("") // unnamed: no metrics, as opkit's
	src := &ctrlsource.Informer{Informer: inf, Handler: &handler.EnqueueRequestForObject{}}
	if err := src.Start(ctx, q); err != nil {
		b.Fatal(err)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatal("informer did not sync")
	}
	sentinel := ctrlreconcile.Request{}
	sentinel.Namespace, sentinel.Name = sentinelNS, sentinelName
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			k, shutdown := q.Get()
			if shutdown {
				return
			}
			if k == sentinel {
				seen <- struct{}{}
			}
			q.Done(k)
		}
	})
	return func() { q.ShutDown(); wg.Wait() }
}

// informerKind is the informer a row's sink listens to.
type informerKind int

const (
	// clientGoInformer is client-go's SharedIndexInformer, controller-runtime's.
	clientGoInformer informerKind = iota
	// opkitInformer is pkg/cache's (internal/informer), lag metrics off.
	opkitInformer
	// opkitInformerLag is pkg/cache's with the lag metrics on, as the
	// cache keeps it with a Registerer (see cacheLag).
	opkitInformerLag
)

func benchInformer(b *testing.B, start sink, kind informerKind) {
	ns := make([]string, benchNamespaces)
	for i := range ns {
		ns[i] = "ns-" + strconv.Itoa(i)
	}
	names := make([]string, benchObjects)
	initial := make([]corev1.ConfigMap, benchObjects+1)
	for i := range benchObjects {
		names[i] = "obj-" + strconv.Itoa(i)
		initial[i] = *configMap(ns[i%benchNamespaces], names[i], 1)
		initial[i].UID = types.UID("uid-" + names[i]) // as the API server's objects have
	}
	initial[benchObjects] = *configMap(sentinelNS, sentinelName, 1)
	initial[benchObjects].UID = "uid-" + sentinelName
	lw := newFakeLW(initial, 1)

	ctx, cancel := context.WithCancel(b.Context())
	var inf toolscache.SharedIndexInformer
	switch kind {
	case clientGoInformer:
		inf = toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	case opkitInformer:
		inf = informer.New(lw, &corev1.ConfigMap{}, informer.Options{})
	case opkitInformerLag:
		inf = informer.New(lw, &corev1.ConfigMap{}, informer.Options{Lag: cacheLag()})
	}
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	seen := make(chan struct{}, 1)
	stop := start(b, ctx, inf, seen)
	defer func() {
		cancel()
		wg.Wait()
		lw.stop()
		stop()
	}()

	// Two slabs of updates, used in turn: the informer holds the objects of
	// the last op's slab, which the next op must not overwrite.
	// Each update carries a write time, as the API server's objects do in
	// managedFields, from which the lag metrics date it.
	written := metav1.Now()
	slabs := [2][]corev1.ConfigMap{make([]corev1.ConfigMap, benchUpdates+1), make([]corev1.ConfigMap, benchUpdates+1)}
	for _, slab := range slabs {
		for i := range benchUpdates {
			j := i % benchObjects
			slab[i].Namespace, slab[i].Name, slab[i].UID = ns[j%benchNamespaces], names[j], initial[j].UID
		}
		slab[benchUpdates].Namespace, slab[benchUpdates].Name, slab[benchUpdates].UID = sentinelNS, sentinelName, initial[benchObjects].UID
		for i := range slab {
			slab[i].ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, Time: &written}}
		}
	}

	var mallocs uint64
	var cpu time.Duration
	var ms runtime.MemStats
	b.ResetTimer()
	for op := range b.N {
		b.StopTimer()
		slab := slabs[op%2]
		base := (op + 1) * (benchUpdates + 1)
		for i := range slab {
			slab[i].ResourceVersion = strconv.Itoa(base + i)
		}
		runtime.ReadMemStats(&ms)
		before, cpuBefore := ms.Mallocs, cpuTime()
		b.StartTimer()

		for i := range slab {
			lw.events <- watch.Event{Type: watch.Modified, Object: &slab[i]}
		}
		<-seen

		b.StopTimer()
		cpu += cpuTime() - cpuBefore
		runtime.ReadMemStats(&ms)
		mallocs += ms.Mallocs - before
		b.StartTimer()
	}
	b.StopTimer()
	events := float64(b.N) * (benchUpdates + 1)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
	b.ReportMetric(float64(mallocs)/events, "allocs/event")
	b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
	// CPU time is less at the mercy of other processes on a shared machine
	// than wall time; it counts every goroutine of the path, the informer's
	// included.
	b.ReportMetric(float64(cpu.Nanoseconds())/events, "cpu-ns/event")
}
