package manager_test

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// A reconciler records events.k8s.io/v1 Events about its objects through
// the manager's recorder.
func TestEventRecorder(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{})
	rec := m.EventRecorder("event-test")
	_, err := manager.NewController(m, "event-test", reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		cm := &corev1.ConfigMap{}
		if err := m.Client().Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name}, cm); err != nil {
			return reconcile.Done(), err
		}
		rec.Eventf(cm, nil, corev1.EventTypeNormal, "Seen", "Reconcile", "saw %s", req.Name)
		return reconcile.Done(), nil
	}), manager.For[*corev1.ConfigMap]())
	if err != nil {
		t.Fatal(err)
	}
	start(t, m)
	if err := m.Client().Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the event", func() bool {
		var evs eventsv1.EventList
		if err := m.Client().List(t.Context(), &evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason == "Seen" && e.Regarding.Name == "a" && e.Note == "saw a" && e.ReportingController == "event-test" {
				return true
			}
		}
		return false
	})
}

// pprof is served beside /metrics only when asked for.
func TestPprof(t *testing.T) {
	for _, on := range []bool{false, true} {
		m := newManager(t, env.Namespace(t), manager.Options{Metrics: manager.MetricsOptions{BindAddress: "127.0.0.1:0", Pprof: on}})
		start(t, m)
		want := http.StatusNotFound
		if on {
			want = http.StatusOK
		}
		if code, _ := get(t, "http://"+m.MetricsAddr()+"/debug/pprof/"); code != want {
			t.Errorf("pprof %v: /debug/pprof/ = %d, want %d", on, code, want)
		}
	}
}
