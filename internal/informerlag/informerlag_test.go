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
// home in a table of minEntries, so that they compete for the same probes.
func addressesAt(n int) []uintptr {
	var out []uintptr
	for a := uintptr(0x1000); len(out) < n; a += 8 {
		if home(a, minEntries) == home(0x1000, minEntries) {
			out = append(out, a)
		}
	}
	return out
}

// An object recorded again keeps its one entry. With a handler, a record
// that finds its probes taken by undelivered objects doubles the table
// rather than replace one, and once they are delivered the table shrinks
// back. Without handlers, the table keeps its size and the newest records.
func TestTableFollowsTheBacklog(t *testing.T) {
	tr := New(Observers{})
	c := tr.Handler(toolscache.ResourceEventHandlerFuncs{}).c
	tr.record(0x8, stamp{}) // delivered: the informer delivers
	tr.lookupAt(c, 0x8, true)
	as := addressesAt(probes + 1)
	for i, a := range as[:probes] {
		tr.record(a, stamp{write: int64(i + 1)})
	}
	tr.record(as[0], stamp{write: 10}) // recorded again
	if n := tr.Len(); n != probes+1 {
		t.Fatalf("%d entries after %d objects, one recorded twice; want %d", n, probes+1, probes+1)
	}
	tr.record(as[probes], stamp{write: 20})
	if got := tr.size(); got != 2*minEntries {
		t.Fatalf("table of %d after %d undelivered objects at one home, want %d", got, probes+1, 2*minEntries)
	}
	got := map[uintptr]int64{}
	for _, a := range as {
		st, _ := tr.lookupAt(c, a, true)
		got[a] = st.write
	}
	want := map[uintptr]int64{as[0]: 10, as[probes]: 20}
	for i, a := range as[1:probes] {
		want[a] = int64(i + 2)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("change times after the table grew (-want +got):\n%s", diff)
	}
	// Everything is delivered: the next shrink check halves the table.
	for i := range minEntries {
		tr.record(uintptr(0x100000+8*i), stamp{})
		tr.lookupAt(c, uintptr(0x100000+8*i), true)
	}
	if got := tr.size(); got != minEntries {
		t.Errorf("table of %d once all is delivered, want %d", got, minEntries)
	}

	// An initial list, ingested before any delivery, does not grow the
	// table: its adds are not observed.
	listing := New(Observers{})
	listing.Handler(toolscache.ResourceEventHandlerFuncs{})
	ingest := listing.Transform(identity)
	for i := range 3 * minEntries {
		_, _ = ingest(stamped(strconv.Itoa(i), "1", time.Unix(1_700_000_000, 0), nil))
	}
	if got := listing.size(); got != minEntries {
		t.Errorf("table of %d after an initial list, want %d", got, minEntries)
	}

	alone := New(Observers{})
	ingest = alone.Transform(identity)
	for i := range 3 * minEntries {
		_, _ = ingest(stamped(strconv.Itoa(i), "1", time.Unix(1_700_000_000, 0), nil))
	}
	if got := alone.size(); got != minEntries {
		t.Errorf("table of %d without handlers, want %d", got, minEntries)
	}
}

// A handler that is released holds no record back: the table does not
// grow for the events it will never be delivered.
func TestReleasedHandlerHoldsNothing(t *testing.T) {
	tr := New(Observers{})
	gone, kept := tr.Handler(toolscache.ResourceEventHandlerFuncs{}), tr.Handler(toolscache.ResourceEventHandlerFuncs{})
	gone.Release()
	gone.Release() // idempotent
	(*Handler)(nil).Release()
	for i := range 5 * minEntries {
		a := uintptr(0x100000 + 8*i)
		tr.record(a, stamp{write: 1})
		tr.lookupAt(kept.c, a, true)
	}
	if got := tr.size(); got != minEntries {
		t.Errorf("table of %d, want %d: the released handler held records back", got, minEntries)
	}
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
		_, first := tr.lookup(nil, obj, claim)
		got = append(got, first)
	}
	tr.record(a, stamp{write: 2})
	_, first := tr.lookup(nil, obj, true)
	got = append(got, first)
	if diff := cmp.Diff([]bool{false, true, false, true}, got); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
}

// While one goroutine records objects again and again, and the table
// grows and shrinks, handlers on other goroutines read consistent stamps
// (both fields of one record), and each record is claimed by at most one
// of them.
func TestConcurrentClaims(t *testing.T) {
	tr := New(Observers{})
	as := addressesAt(4 * probes) // more objects than probes: the table grows
	const records = 100_000
	claims := make([]map[int64]int, 3)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for h := range claims {
		claims[h] = map[int64]int{}
		c := tr.Handler(toolscache.ResourceEventHandlerFuncs{}).c
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				st, first := tr.lookupAt(c, as[i%len(as)], true)
				if st.del != st.write+1 && st.write != 0 {
					t.Errorf("torn read: write %d, del %d", st.write, st.del)
				}
				if first {
					claims[h][st.write]++
				}
			}
		})
	}
	for i := range records {
		w := int64(i + 1)
		tr.record(as[i%len(as)], stamp{write: w, del: w + 1})
		if i%(records/10) == 0 {
			// Everything delivered: the table shrinks at the next check.
			tr.mu.Lock()
			tr.floor = tr.n
			tr.shrink(*tr.table.Load())
			tr.mu.Unlock()
		}
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

// However many objects are ingested before their events are delivered (a
// backlog: a burst of writes, a slow handler), every event is observed
// once and every handler is handed its change time. A table of fixed size
// lost the change times of all but its last few thousand objects, so the
// lag metrics went blind exactly when the lag was highest.
func TestBacklogLosesNoChangeTime(t *testing.T) {
	const backlog = 5 * minEntries
	write := time.Unix(1_700_000_000, 0)
	now := write.Add(10 * time.Second)
	observed := 0
	tr := New(Observers{Update: func(float64) { observed++ }, Now: func() time.Time { return now }})
	ingest := tr.Transform(identity)
	var got1, got2 []string
	h1, h2 := tr.Handler(recorder{got: &got1}), tr.Handler(recorder{got: &got2})
	old := stamped("old", "1", write, nil)
	// Delivery has started: the informer has handed the handlers their
	// initial list.
	listed, _ := ingest(stamped("listed", "1", write, nil))
	h1.OnAdd(listed, true)
	h2.OnAdd(listed, true)
	objs := make([]any, backlog)
	for i := range objs {
		objs[i], _ = ingest(stamped(strconv.Itoa(i), "2", write, nil))
	}
	// h1 runs ahead of h2, as listeners of one informer do.
	for i, obj := range objs {
		h1.OnUpdate(old, obj)
		if i >= backlog/2 {
			h2.OnUpdate(old, objs[i-backlog/2])
		}
	}
	for _, obj := range objs[backlog/2:] {
		h2.OnUpdate(old, obj)
	}
	if observed != backlog {
		t.Errorf("%d of %d events observed", observed, backlog)
	}
	want := append([]string{"add true 0"}, slices.Repeat([]string{"update " + strconv.FormatInt(write.Unix(), 10)}, backlog)...)
	for i, got := range [][]string{got1, got2} {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("change times handed to handler %d (-want +got):\n%s", i+1, diff)
		}
	}
}
