package informer

import (
	"fmt"
	"strconv"
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

// An event not timed takes its handlers' time: the timed event after it
// reads the clock rather than take the reading before it.
func TestUntimedEventEndsTheChain(t *testing.T) {
	changed := time.Unix(1_700_000_000, 0)
	reads := 0
	i := New(fcache.NewFakeControllerSource(), &corev1.ConfigMap{}, Options{Lag: &Lag{
		Now: func() time.Time { reads++; return changed.Add(time.Duration(reads) * time.Second) },
	}})
	h := &chain{}
	if _, err := i.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	deltas := []toolscache.Delta{
		{Type: toolscache.Added, Object: &stamped{obj: cm("a")}},
		{Type: toolscache.Added, Object: cm("b")}, // not in the sample
		{Type: toolscache.Added, Object: &stamped{obj: cm("c")}},
	}
	if err := i.process(deltas, false); err != nil {
		t.Fatal(err)
	}
	want := []time.Time{changed.Add(time.Second), {}, changed.Add(2 * time.Second)}
	if diff := cmp.Diff(want, h.delivered); diff != "" {
		t.Errorf("delivery times (-want +got):\n%s", diff)
	}
}

// timedCounts is a Direct TimedEventHandler that counts the updates it is
// handed, and those handed with a delivery time.
type timedCounts struct{ updates, timed int }

func (*timedCounts) DeliverDirectly()                                  {}
func (*timedCounts) OnAdd(any, bool)                                   {}
func (*timedCounts) OnUpdate(_, _ any)                                 {}
func (*timedCounts) OnDelete(any)                                      {}
func (*timedCounts) OnAddAt(any, bool, time.Time, time.Time) time.Time { return time.Time{} }
func (*timedCounts) OnDeleteAt(any, time.Time, time.Time) time.Time    { return time.Time{} }
func (c *timedCounts) OnUpdateAt(_, _ any, changed, delivered time.Time) time.Time {
	c.updates++
	if !delivered.IsZero() {
		c.timed++
	} else if !changed.IsZero() {
		panic("an event not timed was dated")
	}
	return time.Time{}
}

// Under a flood the informer times a sample of its events, and every
// event again once the flood ends; every event is delivered either way.
func TestLagSamplesAFlood(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	observed := 0
	i := New(fcache.NewFakeControllerSource(), &corev1.ConfigMap{}, Options{Lag: &Lag{
		Update: func(float64) { observed++ },
		Now:    func() time.Time { return now },
	}})
	h := &timedCounts{}
	if _, err := i.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	rv := 0
	// events delivers n updates, one every step, and returns how many of
	// them the lag metrics observed and the handler was handed timed.
	events := func(n int, step time.Duration) (observedN, timedN int) {
		t.Helper()
		o, tm := observed, h.timed
		for range n {
			rv++
			now = now.Add(step)
			obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: "a", ResourceVersion: strconv.Itoa(rv),
				CreationTimestamp: metav1.NewTime(now.Add(-time.Second)),
			}}
			queued, err := i.transformObject(obj)
			if err != nil {
				t.Fatal(err)
			}
			if err := i.process([]toolscache.Delta{{Type: toolscache.Updated, Object: queued}}, false); err != nil {
				t.Fatal(err)
			}
		}
		return observed - o, h.timed - tm
	}

	// Below SampleRate, every event.
	if o, tm := events(1000, time.Millisecond); o != 999 || tm != 999 {
		// The first is an add.
		t.Errorf("at 1,000 events a second: %d observed, %d timed of 999 updates; want all", o, tm)
	}
	// A flood of a million a second: one in MaxSampleStride, after the
	// first window.
	const flood = 300_000
	o, tm := events(flood, time.Microsecond)
	if o != tm {
		t.Errorf("flood: %d observed but %d timed", o, tm)
	}
	if most := flood/MaxSampleStride + 2*int(sampleWindow/time.Microsecond); o > most || o < flood/MaxSampleStride {
		t.Errorf("flood of %d events at 1e6/s: %d observed, want from %d to %d", flood, o, flood/MaxSampleStride, most)
	}
	// Its end is noticed within MaxSampleStride events.
	events(MaxSampleStride, 10*time.Millisecond)
	if o, tm := events(100, 10*time.Millisecond); o != 100 || tm != 100 {
		t.Errorf("after the flood, at 100 a second: %d observed, %d timed of 100; want all", o, tm)
	}
	if want := 999 + flood + MaxSampleStride + 100; h.updates != want {
		t.Errorf("handler handed %d updates, want every one of %d", h.updates, want)
	}
}

// A list (the first, or a relist) is one burst, not a flood of watch
// events: the sparse events after it are every one timed. (A list of
// 2,000 objects once set the sampling stride, and the next 31 events,
// a controller's first live changes, went without a change time.)
func TestLagTimesEveryEventAfterAList(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	i := New(fcache.NewFakeControllerSource(), &corev1.ConfigMap{}, Options{Lag: &Lag{
		Update: func(float64) {},
		// Each reading takes 5µs: a list is delivered at 200,000
		// events a second.
		Now: func() time.Time { now = now.Add(5 * time.Microsecond); return now },
	}})
	h := &timedCounts{}
	if _, err := i.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	object := func(name string, rv int) any {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, ResourceVersion: strconv.Itoa(rv),
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
		}}
		queued, err := i.transformObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		return queued
	}
	for _, initial := range []bool{true, false} {
		var objs []any
		for n := range 2000 {
			now = now.Add(time.Microsecond) // listed at once
			objs = append(objs, object(fmt.Sprint("cm-", n), n+1))
		}
		list := toolscache.ReplacedAllInfo{ResourceVersion: "2000", Objects: objs}
		if err := i.process([]toolscache.Delta{{Type: toolscache.ReplacedAll, Object: list}}, initial); err != nil {
			t.Fatal(err)
		}
		before := h.timed
		for n := range 5 {
			now = now.Add(time.Second)
			obj := object("cm-0", 3000+n)
			if err := i.process([]toolscache.Delta{{Type: toolscache.Updated, Object: obj}}, false); err != nil {
				t.Fatal(err)
			}
		}
		if got := h.timed - before; got != 5 {
			t.Errorf("after a list (initial %v), %d of 5 updates a second apart timed, want all", initial, got)
		}
	}
}
