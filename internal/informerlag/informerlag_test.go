package informerlag

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func stamped(name, rv string, write time.Time, del *metav1.Time) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, ResourceVersion: rv,
		CreationTimestamp: metav1.NewTime(write.Add(-time.Hour)),
		DeletionTimestamp: del,
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "a", Time: &metav1.Time{Time: write.Add(-time.Minute)}},
			{Manager: "b", Time: &metav1.Time{Time: write}},
		},
	}}
}

func identity(obj any) (any, error) { return obj, nil }

// recorder is a TimedEventHandler that keeps the change times it is
// handed, and the delivery times in delivered, if set.
type recorder struct {
	toolscache.ResourceEventHandlerFuncs // never called
	got                                  *[]string
	delivered                            *[]time.Time
}

func (r recorder) OnAddAt(_ any, initial bool, at, delivered time.Time) {
	*r.got = append(*r.got, "add "+strconv.FormatBool(initial)+" "+strconv.FormatInt(unixOf(at), 10))
	r.deliver(delivered)
}
func (r recorder) OnUpdateAt(_, _ any, at, delivered time.Time) {
	*r.got = append(*r.got, "update "+strconv.FormatInt(unixOf(at), 10))
	r.deliver(delivered)
}
func (r recorder) OnDeleteAt(_ any, at, delivered time.Time) {
	*r.got = append(*r.got, "delete "+strconv.FormatInt(unixOf(at), 10))
	r.deliver(delivered)
}

func (r recorder) deliver(at time.Time) {
	if r.delivered != nil {
		*r.delivered = append(*r.delivered, at)
	}
}

func unixOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// Every kind of event is observed once, by whichever handler is delivered
// it first, however many handlers and listeners the informer has; the
// initial list, resyncs and inferred deletes are not observed; a timed
// handler is handed each event's change time whether or not it observed
// it, and the time of its delivery: the observation's clock reading, or
// one of its own; a plain handler gets its events unchanged, and neither
// it nor a listener reads the clock unless it observes.
func TestOneObservationPerEvent(t *testing.T) {
	write := time.Unix(1_700_000_000, 0)
	deleted := metav1.NewTime(write.Add(2 * time.Second))
	now := write.Add(10 * time.Second)
	observed := map[string][]float64{}
	clock := 0
	o := func(kind string) func(float64) {
		return func(s float64) { observed[kind] = append(observed[kind], s) }
	}
	tr := New(Observers{Add: o("add"), Update: o("update"), Delete: o("delete"), Now: func() time.Time { clock++; return now }})
	ingest := tr.Transform(identity)
	in := func(obj *corev1.ConfigMap) any {
		out, err := ingest(obj)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	var timed1, timed2 []string
	var delivered []time.Time
	plain := 0
	handlers := []toolscache.ResourceEventHandler{
		tr.Handler(recorder{got: &timed1, delivered: &delivered}),
		tr.Handler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { plain++ },
			UpdateFunc: func(any, any) { plain++ },
			DeleteFunc: func(any) { plain++ },
		}),
		tr.Listener(),
		tr.Handler(recorder{got: &timed2, delivered: &delivered}),
	}
	listed := in(stamped("listed", "1", write, nil))
	created := in(stamped("created", "2", write, nil))
	updated := in(stamped("created", "3", write.Add(time.Second), nil))
	deleting := in(stamped("created", "4", write.Add(time.Second), &deleted))
	gone := in(stamped("created", "5", write.Add(time.Second), &deleted))
	for _, h := range handlers {
		h.OnAdd(listed, true)
		h.OnAdd(created, false)
		h.OnUpdate(created, updated)
		h.OnUpdate(updated, updated) // a resync
		h.OnUpdate(updated, deleting)
		h.OnDelete(gone)
		h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/created", Obj: gone})
	}
	want := map[string][]float64{"add": {10}, "update": {9, 8}, "delete": {8}}
	if diff := cmp.Diff(want, observed); diff != "" {
		t.Errorf("observations (-want +got):\n%s", diff)
	}
	// The first handler observes 4 events and reads the clock for the 3
	// others; the last reads it for its 7.
	if clock != 14 {
		t.Errorf("%d clock readings, want 14: one per event for each timed handler", clock)
	}
	if diff := cmp.Diff(slices.Repeat([]time.Time{now}, 14), delivered, cmp.Comparer(time.Time.Equal)); diff != "" {
		t.Errorf("delivery times (-want +got):\n%s", diff)
	}
	w, d := strconv.FormatInt(write.Unix(), 10), strconv.FormatInt(deleted.Unix(), 10)
	w1 := strconv.FormatInt(write.Unix()+1, 10)
	wantTimed := []string{"add true 0", "add false " + w, "update " + w1, "update 0", "update " + d, "delete " + d, "delete 0"}
	for i, got := range [][]string{timed1, timed2} {
		if diff := cmp.Diff(wantTimed, got); diff != "" {
			t.Errorf("timed handler %d (-want +got):\n%s", i, diff)
		}
	}
	if plain != 7 {
		t.Errorf("plain handler got %d events, want 7", plain)
	}
}

// addressesAt returns n distinct addresses whose entries start at the same
// home, so that they compete for the same probes.
func addressesAt(n int) []uintptr {
	var out []uintptr
	for a := uintptr(0x1000); len(out) < n; a += 8 {
		if home(a) == home(0x1000) {
			out = append(out, a)
		}
	}
	return out
}

// An object recorded again keeps its one entry; once the entries an object
// may take are full, a new object replaces the oldest of them, not one
// recorded since; and the table never holds more than maxStamps objects.
func TestReplacesTheOldest(t *testing.T) {
	tr := New(Observers{})
	as := addressesAt(probes + 1)
	for i, a := range as[:probes] {
		tr.record(a, stamp{write: int64(i + 1)})
	}
	tr.record(as[0], stamp{write: 10}) // recorded again: now the newest
	if n := tr.Len(); n != probes {
		t.Fatalf("%d entries after %d objects, one recorded twice; want %d", n, probes, probes)
	}
	tr.record(as[probes], stamp{write: 20})
	got := map[uintptr]int64{}
	for _, a := range as {
		if st, _ := lookupAddr(tr, a); st.write != 0 {
			got[a] = st.write
		}
	}
	want := map[uintptr]int64{as[0]: 10, as[2]: 3, as[3]: 4, as[4]: 20}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries after a fifth object (-want +got): the oldest, as[1], should have gone:\n%s", diff)
	}
	write := time.Unix(1_700_000_000, 0)
	ingest := tr.Transform(identity)
	for i := range 3 * maxStamps {
		_, _ = ingest(stamped(strconv.Itoa(i), "1", write, nil))
	}
	if n := tr.Len(); n > maxStamps {
		t.Errorf("%d entries, want at most %d", n, maxStamps)
	}
}

func lookupAddr(tr *Tracker, a uintptr) (stamp, bool) {
	tab := tr.table.Load()
	for i := range probes {
		if st, first, ok := read(&tab[(home(a)+i)%maxStamps], a, false); ok {
			return st, first
		}
	}
	return stamp{}, false
}

// A record is claimed once, by the first claiming lookup; recording the
// object again makes a new claim possible; a lookup that does not claim
// never takes the claim.
func TestClaimOncePerRecord(t *testing.T) {
	tr := New(Observers{})
	obj := stamped("a", "1", time.Unix(1_700_000_000, 0), nil)
	a := address(obj)
	tr.record(a, stamp{write: 1})
	var got []bool
	for _, claim := range []bool{false, true, true} {
		_, first := tr.lookup(obj, claim)
		got = append(got, first)
	}
	tr.record(a, stamp{write: 2})
	_, first := tr.lookup(obj, true)
	got = append(got, first)
	if diff := cmp.Diff([]bool{false, true, false, true}, got); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
}

// While one goroutine records objects again and again, handlers on other
// goroutines read consistent stamps (both fields of one record), and each
// record is claimed by at most one of them.
func TestConcurrentClaims(t *testing.T) {
	tr := New(Observers{})
	as := addressesAt(probes + 2) // more objects than entries: replacements too
	const records = 100_000
	claims := make([]map[int64]int, 3)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for h := range claims {
		claims[h] = map[int64]int{}
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				a := as[i%len(as)]
				tab := tr.table.Load()
				if tab == nil {
					continue
				}
				for p := range probes {
					st, first, ok := read(&tab[(home(a)+p)%maxStamps], a, true)
					if !ok {
						continue
					}
					if st.del != st.write+1 {
						t.Errorf("torn read: write %d, del %d", st.write, st.del)
					}
					if first {
						claims[h][st.write]++
					}
					break
				}
			}
		})
	}
	for i := range records {
		w := int64(i + 1)
		tr.record(as[i%len(as)], stamp{write: w, del: w + 1})
	}
	close(done)
	wg.Wait()
	total := map[int64]int{}
	for _, c := range claims {
		for w, n := range c {
			total[w] += n
		}
	}
	for w, n := range total {
		if n > 1 {
			t.Errorf("record %d claimed %d times, want at most once", w, n)
		}
	}
	if len(total) == 0 {
		t.Error("no record was claimed")
	}
}

// BenchmarkTracker is the cache's part of the lag metrics' cost per
// event: recording the change times at ingest and one handler looking
// them up and observing the lag.
func BenchmarkTracker(b *testing.B) {
	objs := make([]*corev1.ConfigMap, 1000)
	now := time.Now()
	for i := range objs {
		objs[i] = stamped(strconv.Itoa(i), "2", now, nil)
	}
	old := stamped("old", "1", now, nil)
	tr := New(Observers{Add: func(float64) {}, Update: func(float64) {}, Delete: func(float64) {}})
	ingest := tr.Transform(identity)
	h := tr.Handler(toolscache.ResourceEventHandlerFuncs{})
	for i := 0; b.Loop(); i++ {
		obj, _ := ingest(objs[i%len(objs)])
		h.OnUpdate(old, obj)
	}
}

// A change dated after the delivery (the API server's clock ahead of
// ours, or a managedFields time a client wrote) is observed as no lag,
// not as a negative one, which would pull the histogram's sum down.
func TestFutureChangeIsNoLag(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var got []float64
	tr := New(Observers{Update: func(s float64) { got = append(got, s) }, Now: func() time.Time { return now }})
	ingest := tr.Transform(identity)
	old := stamped("a", "1", now.Add(-time.Hour), nil)
	newObj, err := ingest(stamped("a", "2", now.Add(time.Hour), nil))
	if err != nil {
		t.Fatal(err)
	}
	tr.Handler(toolscache.ResourceEventHandlerFuncs{}).OnUpdate(old, newObj)
	if diff := cmp.Diff([]float64{0}, got); diff != "" {
		t.Errorf("observed lags (-want +got):\n%s", diff)
	}
}
