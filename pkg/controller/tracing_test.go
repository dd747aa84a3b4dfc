package controller_test

import (
	"context"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
	"github.com/opkit-dev/opkit/pkg/tracing"
)

// A traced controller without metrics (no Registerer) still has the
// change time of the event that queued a key, from a cache that keeps
// them; and a reconcile that requeues links the next one to it.
func TestTracingWithoutMetrics(t *testing.T) {
	w := newWorld(t)
	var err error
	if w.cache, err = cache.New(env.Config(), cache.Options{Namespaces: []string{w.ns}, Registerer: w.reg}); err != nil {
		t.Fatal(err)
	}
	if w.cms, err = cache.Register[*corev1.ConfigMap](w.cache, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	var calls atomic.Int32
	r := reconcile.Func[reconcile.Request](func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		if req.Name == "a" && calls.Add(1) == 1 {
			return reconcile.RequeueWithBackoff(), nil
		}
		return reconcile.Done(), nil
	})
	c, err := controller.New("traced", r, controller.Options[reconcile.Request]{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)),
	})
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
	// Objects created before the source attaches come in its initial list,
	// of unknown change time: wait for a first reconcile.
	w.create(t, "probe", nil, nil)
	eventually(t, "the probe's reconcile", func() bool { return len(exp.GetSpans()) == 1 })
	w.create(t, "a", nil, nil)
	eventually(t, "two reconciles of a", func() bool { return len(exp.GetSpans()) == 3 })
	first, second := exp.GetSpans()[1], exp.GetSpans()[2]
	has := func(s tracetest.SpanStub, k attribute.Key) (attribute.Value, bool) {
		for _, kv := range s.Attributes {
			if kv.Key == k {
				return kv.Value, true
			}
		}
		return attribute.Value{}, false
	}
	if _, ok := has(first, tracing.EventChangedKey); !ok {
		t.Errorf("the first reconcile has no %s: %v", tracing.EventChangedKey, first.Attributes)
	}
	if v, _ := has(first, tracing.ResultKey); v.AsString() != imetrics.ResultRequeue {
		t.Errorf("the first reconcile's result %q, want requeue", v.AsString())
	}
	if len(second.Links) != 1 || second.Links[0].SpanContext.SpanID() != first.SpanContext.SpanID() ||
		len(second.Links[0].Attributes) != 1 || second.Links[0].Attributes[0] != tracing.LinkReasonKey.String(imetrics.ResultRequeue) {
		t.Errorf("the second reconcile's links %+v, want one to the first, reason requeue", second.Links)
	}
}
