package consistency_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// A key waiting for the cache to catch up with its last reconcile's writes
// holds no worker: with one worker, another key is reconciled meanwhile,
// and the waiting key is not, however often it is queued again.
func TestWaitHoldsNoWorker(t *testing.T) {
	ns := env.Namespace(t)
	mgr := newManager(t, ns)
	if _, err := cache.Register[*corev1.ConfigMap](mgr.Cache(), cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	var p *corev1.ConfigMap
	for _, name := range []string{"p", "q"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := mgr.UncachedClient().Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		if name == "p" {
			p = cm
		}
	}
	never := neverSeen(t, p)

	seen := make(chan string, 16)
	r := reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if req.Name == "p" {
			controller.RecordWrite(ctx, mgr.Cache(), corev1.SchemeGroupVersion.WithKind("ConfigMap"), never, false)
		}
		seen <- req.Name
		return reconcile.Done(), nil
	})
	c, err := manager.NewController(mgr, "parked", r,
		manager.For[*corev1.ConfigMap](nil),
		manager.WithOptions(controller.Options[reconcile.Request]{MaxConcurrentReconciles: 1, ReadYourWritesTimeout: 10 * time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	start(t, mgr)
	for range 2 { // the creates of p and q
		select {
		case <-seen:
		case <-time.After(30 * time.Second): // a bound on failure, not a measurement
			t.Fatal("the creates were not reconciled")
		}
	}
	p0, q0 := reconcile.Request{Namespace: ns, Name: "p"}, reconcile.Request{Namespace: ns, Name: "q"}
	c.Queue().Add(p0) // waits for a write the cache never sees
	for range 3 {
		c.Queue().Add(q0)
		select {
		case name := <-seen:
			if name != "q" {
				t.Fatalf("reconciled %s before the cache caught up with its writes", name)
			}
		case <-time.After(30 * time.Second): // a bound on failure, not a measurement
			t.Fatal("q was not reconciled while p waited for the cache: the wait holds the only worker")
		}
		c.Queue().Add(p0)
	}
}

// A key parked while the cache catches up keeps the time of the change
// that queued it: the reconcile it gets after the wait observes the lag
// from that change in opkit_controller_event_lag_seconds.
func TestParkKeepsChangeTime(t *testing.T) {
	ns := env.Namespace(t)
	mgr := newManager(t, ns)
	if _, err := cache.Register[*corev1.ConfigMap](mgr.Cache(), cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	p := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
	if err := mgr.UncachedClient().Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	never := neverSeen(t, p)
	seen := make(chan int, 16)
	n := 0
	r := reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		n++
		if n == 1 {
			controller.RecordWrite(ctx, mgr.Cache(), corev1.SchemeGroupVersion.WithKind("ConfigMap"), never, false)
		}
		seen <- n
		return reconcile.Done(), nil
	})
	c, err := manager.NewController(mgr, "parked", r,
		manager.For[*corev1.ConfigMap](nil),
		manager.WithOptions(controller.Options[reconcile.Request]{MaxConcurrentReconciles: 1, ReadYourWritesTimeout: 100 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	start(t, mgr)
	wait := func(what string) {
		t.Helper()
		select {
		case <-seen:
		case <-time.After(30 * time.Second): // a bound on failure, not a measurement
			t.Fatalf("%s was not reconciled", what)
		}
	}
	wait("the create")
	lagSum := func() float64 {
		mfs, err := mgr.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "opkit_controller_event_lag_seconds" {
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "controller" && l.GetValue() == "parked" {
							return m.GetHistogram().GetSampleSum()
						}
					}
				}
			}
		}
		return 0
	}
	before := lagSum()
	// Parked until the wait for a write the cache never sees times out.
	c.Queue().AddWithOpts(queue.AddOpts{Changed: time.Now().Add(-time.Hour)}, reconcile.Request{Namespace: ns, Name: "p"})
	wait("the parked key")
	if got := lagSum() - before; got < time.Hour.Seconds() {
		t.Errorf("the parked key's reconcile observed %vs of lag, want at least an hour", got)
	}
}
