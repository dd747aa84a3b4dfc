package consistency_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// A write the cache never catches up with holds the key's next reconcile
// back for ReadYourWritesTimeout only: then it runs, and the wait is
// counted as a timeout.
func TestWaitIsBoundedAndCounted(t *testing.T) {
	ns := env.Namespace(t)
	mgr := newManager(t, ns)
	if _, err := cache.Register[*corev1.ConfigMap](mgr.Cache(), cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	parent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
	if err := mgr.UncachedClient().Create(t.Context(), parent); err != nil {
		t.Fatal(err)
	}
	never := neverSeen(t, parent)

	reconciled := make(chan struct{}, 2)
	r := reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		controller.RecordWrite(ctx, mgr.Cache(), corev1.SchemeGroupVersion.WithKind("ConfigMap"), never, false)
		reconciled <- struct{}{}
		return reconcile.Done(), nil
	})
	c, err := manager.NewController(mgr, "bounded", r,
		manager.For[*corev1.ConfigMap](nil),
		manager.WithOptions(controller.Options[reconcile.Request]{ReadYourWritesTimeout: 100 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	start(t, mgr)
	<-reconciled // the parent's create event
	c.Queue().Add(reconcile.Request{Namespace: ns, Name: "p"})
	select {
	case <-reconciled:
	case <-time.After(30 * time.Second): // a bound on failure, not a measurement
		t.Fatal("the reconcile after a write the cache never sees did not run")
	}
	if n := waits(t, mgr.Registry(), "bounded", imetrics.WaitTimeout); n != 1 {
		t.Errorf("%s{result=%q} count = %d, want 1", imetrics.ReadYourWritesWait, imetrics.WaitTimeout, n)
	}
}

// waits returns the number of read-your-writes waits of controller with
// result.
func waits(t *testing.T, reg prometheus.Gatherer, controller, result string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != imetrics.ReadYourWritesWait {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] == controller && labels["result"] == result {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// neverSeen returns obj at a version far past any the informer will see in
// a test: a write the cache never catches up with.
func neverSeen(t *testing.T, obj *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	rv, err := strconv.ParseInt(obj.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	never := obj.DeepCopy()
	never.ResourceVersion = strconv.FormatInt(rv+1_000_000_000, 10)
	return never
}
