package source_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// Under WithLag, each event the predicates keep is timed once, and the
// change time the cache hands over is recorded for every key the handler
// queues, the earliest per key; events the predicates drop, and changes
// of unknown time, record nothing. Without WithLag nothing is recorded.
func TestLagRecordsChangeTimes(t *testing.T) {
	inf := newFakeInformer()
	q := newQueue[reconcile.Request](t)
	changes := source.NewChangeTimes[reconcile.Request]()
	var timed []string
	ctx := source.WithLag(t.Context(), source.Lag[reconcile.Request]{
		Queued: func(typ string) func(float64) {
			return func(s float64) {
				if s < 0 {
					t.Errorf("negative lag %v", s)
				}
				timed = append(timed, typ)
			}
		},
		Changes: changes,
	})
	keep := source.LabelSelector[*corev1.ConfigMap](labels.SelectorFromSet(labels.Set{"keep": "yes"}))
	src := source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap](), keep)
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	h, ok := inf.events().(cache.TimedEventHandler)
	if !ok {
		t.Fatal("the source's handler does not take change times")
	}
	kept := func(name string, rv int) *corev1.ConfigMap {
		cm := configMap("ns", name, rv)
		cm.Labels = map[string]string{"keep": "yes"}
		return cm
	}
	first := time.Unix(1_700_000_000, 0)
	h.OnAddAt(kept("a", 1), false, first.Add(time.Second))
	h.OnUpdateAt(kept("a", 1), kept("a", 2), first) // earlier: it wins
	h.OnAddAt(configMap("ns", "dropped", 1), false, first)
	h.OnAddAt(kept("unknown", 1), false, time.Time{})

	if len(timed) != 3 {
		t.Errorf("%d events timed, want the 3 the predicate kept", len(timed))
	}
	if got, ok := changes.Take(req("ns", "a")); !ok || !got.Equal(first) {
		t.Errorf("change time of ns/a: %v %v, want %v", got, ok, first)
	}
	for _, name := range []string{"dropped", "unknown"} {
		if got, ok := changes.Take(req("ns", name)); ok {
			t.Errorf("change time of ns/%s recorded: %v", name, got)
		}
	}
	if n := len(drain(q)); n != 2 {
		t.Errorf("%d keys queued, want 2 (a, unknown)", n)
	}
}
