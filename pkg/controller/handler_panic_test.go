package controller_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// A map function that panics on one object costs its controller that
// event and nothing else: the panic is recovered and counted, the same
// controller handles the next object, and another controller watching the
// same informer sees every event.
func TestHandlerPanicIsolated(t *testing.T) {
	w := newWorld(t)
	fragileKeys, steadyKeys := &keyRecorder{}, &keyRecorder{}
	fragile, err := controller.New("fragile", reconcile.Reconciler[reconcile.Request](fragileKeys), controller.Options[reconcile.Request]{Registerer: w.reg})
	if err != nil {
		t.Fatal(err)
	}
	steady, err := controller.New("steady", reconcile.Reconciler[reconcile.Request](steadyKeys), controller.Options[reconcile.Request]{Registerer: w.reg})
	if err != nil {
		t.Fatal(err)
	}
	bombs := source.EnqueueMapped(func(cm *corev1.ConfigMap) []reconcile.Request {
		if cm.Name == "bomb" {
			panic("a bug in a map function")
		}
		return []reconcile.Request{{Namespace: cm.Namespace, Name: cm.Name}}
	})
	if err := fragile.Watch(source.NewKind(w.cms, bombs)); err != nil {
		t.Fatal(err)
	}
	if err := steady.Watch(source.NewKind(w.cms, source.EnqueueObject[*corev1.ConfigMap]())); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("controller: %v", err)
			}
		}
	})
	if err := w.cache.Start(ctx); err != nil {
		t.Fatal(err)
	}
	go func() { done <- fragile.Start(ctx) }()
	go func() { done <- steady.Start(ctx) }()

	w.create(t, "bomb", nil, nil)
	w.create(t, "fine", nil, nil)
	key := func(name string) string { return w.ns + "/" + name }
	eventually(t, "the steady controller to see both objects", func() bool {
		return steadyKeys.count(key("bomb")) > 0 && steadyKeys.count(key("fine")) > 0
	})
	eventually(t, "the fragile controller to see the object after the bomb", func() bool { return fragileKeys.count(key("fine")) > 0 })
	counter, err := imetrics.NewHandlerPanics(w.reg)
	if err != nil {
		t.Fatal(err)
	}
	panics := testutil.ToFloat64(counter.WithLabelValues("fragile", "v1/ConfigMap"))
	if panics < 1 {
		t.Errorf("%s{controller=fragile,type=v1/ConfigMap} = %v, want at least 1", imetrics.HandlerPanics, panics)
	}
	if n := fragileKeys.count(key("bomb")); n != 0 {
		t.Errorf("the fragile controller reconciled the bomb %d times; its event should have been dropped", n)
	}
}
