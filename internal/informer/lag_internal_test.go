package informer

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
)

// chain is a Direct TimedEventHandler that keeps the delivery time of
// each add, and says it returned a millisecond after it.
type chain struct{ delivered []time.Time }

var (
	_ Direct            = (*chain)(nil)
	_ TimedEventHandler = (*chain)(nil)
)

func (*chain) DeliverDirectly()                               {}
func (*chain) OnAdd(any, bool)                                {}
func (*chain) OnUpdate(_, _ any)                              {}
func (*chain) OnDelete(any)                                   {}
func (*chain) OnDeleteAt(any, time.Time, time.Time) time.Time { return time.Time{} }
func (*chain) OnUpdateAt(_, _ any, _, _ time.Time) time.Time  { return time.Time{} }
func (c *chain) OnAddAt(_ any, _ bool, _, delivered time.Time) time.Time {
	c.delivered = append(c.delivered, delivered)
	return delivered.Add(time.Millisecond)
}

// In a batch of events, each is delivered at the time the handler of the
// one before returned, and observed from it: the informer reads the clock
// once for the batch, not once an event.
func TestDeliveryTimesChain(t *testing.T) {
	changed := time.Unix(1_700_000_000, 0)
	reads := 0
	var lags []float64
	i := New(fcache.NewFakeControllerSource(), &corev1.ConfigMap{}, Options{Lag: &Lag{
		Add: func(s float64) { lags = append(lags, s) },
		Now: func() time.Time { reads++; return changed.Add(time.Second) },
	}})
	h := &chain{}
	if _, err := i.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	var deltas []toolscache.Delta
	for _, name := range []string{"a", "b", "c"} {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		deltas = append(deltas, toolscache.Delta{Type: toolscache.Added, Object: &stamped{obj: obj, stamp: stamp{write: changed.Unix()}}})
	}
	if err := i.process(deltas, false); err != nil {
		t.Fatal(err)
	}
	start := changed.Add(time.Second)
	want := []time.Time{start, start.Add(time.Millisecond), start.Add(2 * time.Millisecond)}
	if diff := cmp.Diff(want, h.delivered); diff != "" {
		t.Errorf("delivery times (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{1, 1.001, 1.002}, lags, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
		t.Errorf("lags observed (-want +got):\n%s", diff)
	}
	if reads != 1 {
		t.Errorf("%d clock readings for a batch of 3 events, want 1", reads)
	}
	// The next batch, after the queue may have waited, reads the clock.
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}}
	if err := i.process([]toolscache.Delta{{Type: toolscache.Added, Object: &stamped{obj: obj}}}, false); err != nil {
		t.Fatal(err)
	}
	if reads != 2 {
		t.Errorf("%d clock readings after a second batch, want 2", reads)
	}
}
