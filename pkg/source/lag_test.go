package source_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/opkit-dev/opkit/internal/informer"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// Under WithLag, each event the predicates keep is timed once, and the
// change time the cache hands over goes with every key the handler
// queues, the earliest per key; events the predicates drop, and changes
// of unknown time, carry none.
func TestLagQueuesChangeTimes(t *testing.T) {
	inf := newFakeInformer()
	q := newQueue[reconcile.Request](t)
	var timed []string
	ctx := source.WithLag(t.Context(), source.Lag{
		Queued: func(typ string) func(float64) {
			return func(s float64) {
				if s < 0 {
					t.Errorf("negative lag %v", s)
				}
				timed = append(timed, typ)
			}
		},
		Changes: true,
	})
	keep := source.LabelSelector[*corev1.ConfigMap](labels.SelectorFromSet(labels.Set{"keep": "yes"}))
	src := source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap](), keep)
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	h, ok := inf.events().(informer.TimedEventHandler)
	if !ok {
		t.Fatal("the source's handler does not take change times")
	}
	kept := func(name string, rv int) *corev1.ConfigMap {
		cm := configMap("ns", name, rv)
		cm.Labels = map[string]string{"keep": "yes"}
		return cm
	}
	first := time.Unix(1_700_000_000, 0)
	now := time.Now()
	h.OnAddAt(kept("a", 1), false, first.Add(time.Second), now)
	h.OnUpdateAt(kept("a", 1), kept("a", 2), first, now) // earlier: it wins
	h.OnAddAt(configMap("ns", "dropped", 1), false, first, now)
	h.OnAddAt(kept("unknown", 1), false, time.Time{}, now)

	if len(timed) != 3 {
		t.Errorf("%d events timed, want the 3 the predicate kept", len(timed))
	}
	got := map[string]time.Time{}
	for q.Len() > 0 {
		k, _, changed, _ := q.GetChanged()
		q.Done(k)
		got[k.Name] = changed
	}
	want := map[string]time.Time{"a": first, "unknown": {}}
	if diff := cmp.Diff(want, got, cmp.Comparer(time.Time.Equal)); diff != "" {
		t.Errorf("keys queued and their change times (-want +got):\n%s", diff)
	}
}

// Without Lag.Changes, keys are queued without their change times.
func TestLagWithoutChanges(t *testing.T) {
	inf := newFakeInformer()
	q := newQueue[reconcile.Request](t)
	ctx := source.WithLag(t.Context(), source.Lag{Queued: func(string) func(float64) { return func(float64) {} }})
	src := source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap]())
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	h := inf.events().(informer.TimedEventHandler)
	h.OnAddAt(configMap("ns", "a", 1), false, time.Unix(1_700_000_000, 0), time.Now())
	if k, _, changed, _ := q.GetChanged(); !changed.IsZero() {
		t.Errorf("change time of %v: %v, want none", k, changed)
	}
}

// The source times an event from its delivery as the cache dates it,
// without a clock reading of its own for the start, and from its own
// reading when the cache does not say.
func TestLagTimesFromDelivery(t *testing.T) {
	inf := newFakeInformer()
	q := newQueue[reconcile.Request](t)
	var queued []float64
	ctx := source.WithLag(t.Context(), source.Lag{Queued: func(string) func(float64) {
		return func(s float64) { queued = append(queued, s) }
	}})
	src := source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap]())
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	h := inf.events().(informer.TimedEventHandler)
	h.OnAddAt(configMap("ns", "a", 1), false, time.Time{}, time.Now().Add(-time.Hour))
	// A cache that keeps no metrics hands the event without times: the
	// handler times it itself.
	inf.events().OnAdd(configMap("ns", "b", 1), false)
	// An event the cache did not sample is handed with zero times: it is
	// queued, not timed.
	h.OnAddAt(configMap("ns", "c", 1), false, time.Time{}, time.Time{})
	if len(queued) != 2 || queued[0] < time.Hour.Seconds() || queued[1] < 0 || queued[1] >= time.Hour.Seconds() {
		t.Errorf("queued %v, want an hour or more, then less, and no third", queued)
	}
	if q.Len() != 3 {
		t.Errorf("queue holds %d keys, want all 3 events' keys", q.Len())
	}
}
