package source_test

import (
	"context"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// controllerSink is opkitSink through a real controller.Controller (one
// worker, a Reconciler that does nothing, no metrics, no read-your-writes)
// with tracing as tp says: nil is tracing off, the default.
func controllerSink(tp func() trace.TracerProvider) sink {
	return func(b *testing.B, ctx context.Context, inf toolscache.SharedIndexInformer, seen chan<- struct{}) func() {
		sentinel := reconcile.Request{Namespace: sentinelNS, Name: sentinelName}
		r := reconcile.Func[reconcile.Request](func(_ context.Context, k reconcile.Request) (reconcile.Result, error) {
			if k == sentinel {
				seen <- struct{}{}
			}
			return reconcile.Done(), nil
		})
		c, err := controller.New("bench", r, controller.Options[reconcile.Request]{
			ReadYourWritesTimeout: -1,
			Logger:                funcr.New(func(string, string) {}, funcr.Options{}),
			TracerProvider:        tp(),
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
}

// tracingOff is a controller without a TracerProvider.
func tracingOff() trace.TracerProvider { return nil }

// tracingOn is the SDK as FromEnv builds it (a batching span processor),
// exporting to an exporter that keeps nothing, so that the row measures
// making, ending and batching the spans, not a network or a growing heap.
func tracingOn() trace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
}
