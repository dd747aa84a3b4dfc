package informer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/opkit-dev/opkit/internal/informer"
)

func configMap(name, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string]string{"v": data}}
}

// recorder keeps the events it is handed, as "add name v", "update name
// v0>v1" and "delete name v", and checks that they make sense as a
// history: an add of an object not held, an update from the version last
// handed, a delete of an object held.
type recorder struct {
	mu     sync.Mutex
	events []string
	held   map[string]string
	errs   []string
	// block, if not nil, is received from before each event is recorded.
	block chan struct{}
}

func newRecorder() *recorder { return &recorder{held: map[string]string{}} }

func (r *recorder) note(format string, args ...any) {
	r.events = append(r.events, fmt.Sprintf(format, args...))
}

func (r *recorder) fail(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) OnAdd(obj any, initial bool) {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cm := obj.(*corev1.ConfigMap)
	if v, ok := r.held[cm.Name]; ok {
		r.fail("add %s %s while %s is held", cm.Name, cm.Data["v"], v)
	}
	r.held[cm.Name] = cm.Data["v"]
	r.note("add %s %s", cm.Name, cm.Data["v"])
}

func (r *recorder) OnUpdate(oldObj, newObj any) {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	o, n := oldObj.(*corev1.ConfigMap), newObj.(*corev1.ConfigMap)
	if v, ok := r.held[o.Name]; !ok || v != o.Data["v"] {
		r.fail("update %s from %s while %q is held", o.Name, o.Data["v"], v)
	}
	r.held[n.Name] = n.Data["v"]
	r.note("update %s %s>%s", n.Name, o.Data["v"], n.Data["v"])
}

func (r *recorder) OnDelete(obj any) {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	cm := obj.(*corev1.ConfigMap)
	if _, ok := r.held[cm.Name]; !ok {
		r.fail("delete %s, not held", cm.Name)
	}
	delete(r.held, cm.Name)
	r.note("delete %s %s", cm.Name, cm.Data["v"])
}

func (r *recorder) snapshot() (events, errs []string, held map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	held = map[string]string{}
	for k, v := range r.held {
		held[k] = v
	}
	return append([]string(nil), r.events...), append([]string(nil), r.errs...), held
}

// directRecorder is a recorder the informer calls directly.
type directRecorder struct{ *recorder }

func (directRecorder) DeliverDirectly() {}

func run(t *testing.T, inf *informer.Informer) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		inf.RunWithContext(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHandlersSeeEveryEventInOrder(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	src.Add(configMap("a", "1"))
	src.Add(configMap("b", "1"))
	inf := informer.New(src, &corev1.ConfigMap{}, informer.Options{})
	d, b := newRecorder(), newRecorder()
	if _, err := inf.AddEventHandler(directRecorder{d}); err != nil {
		t.Fatal(err)
	}
	breg, err := inf.AddEventHandler(b)
	if err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	eventually(t, "the buffered handler's sync", breg.HasSynced)

	src.Modify(configMap("a", "2"))
	src.Delete(configMap("b", "1"))
	src.Add(configMap("c", "1"))
	want := []string{"add a 1", "add b 1", "update a 1>2", "delete b 1", "add c 1"}
	for name, r := range map[string]*recorder{"direct": d, "buffered": b} {
		eventually(t, name+" handler's events", func() bool { ev, _, _ := r.snapshot(); return len(ev) >= len(want) })
		ev, errs, _ := r.snapshot()
		slices.Sort(ev[:2]) // the initial list's order is the fake's map's
		if fmt.Sprint(ev) != fmt.Sprint(want) || len(errs) > 0 {
			t.Errorf("%s handler got %q (errors %q), want %q", name, ev, errs, want)
		}
	}
}

// A handler that is not Direct and blocks delays only itself: the store
// and a Direct handler go on, and it gets every event once unblocked.
func TestSlowHandlerDelaysOnlyItself(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	src.Add(configMap("a", "0"))
	inf := informer.New(src, &corev1.ConfigMap{}, informer.Options{})
	slow := newRecorder()
	slow.block = make(chan struct{})
	sreg, err := inf.AddEventHandler(slow)
	if err != nil {
		t.Fatal(err)
	}
	fast := newRecorder()
	if _, err := inf.AddEventHandler(directRecorder{fast}); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	if sreg.HasSynced() {
		t.Error("a handler not yet handed its initial list has synced")
	}
	for v := 1; v <= 100; v++ {
		src.Modify(configMap("a", fmt.Sprint(v)))
	}
	eventually(t, "the store", func() bool {
		obj, ok, _ := inf.GetStore().GetByKey("ns/a")
		return ok && obj.(*corev1.ConfigMap).Data["v"] == "100"
	})
	eventually(t, "the direct handler", func() bool { _, _, held := fast.snapshot(); return held["a"] == "100" })
	if ev, _, _ := slow.snapshot(); len(ev) != 0 {
		t.Fatalf("the blocked handler recorded %q", ev)
	}
	close(slow.block)
	eventually(t, "the slow handler", func() bool { _, _, held := slow.snapshot(); return held["a"] == "100" })
	eventually(t, "the slow handler's sync", sreg.HasSynced)
	ev, errs, _ := slow.snapshot()
	if len(ev) != 101 || len(errs) > 0 {
		t.Errorf("the slow handler got %d events, errors %q; want 101", len(ev), errs)
	}
}

// A handler added while events flow is handed the store's objects and
// then every later event, with nothing handed twice or skipped: an
// update's old object is always the one it holds.
func TestLateHandlersSeeAConsistentHistory(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	for i := range 20 {
		src.Add(configMap(fmt.Sprint("o", i), "0"))
	}
	inf := informer.New(src, &corev1.ConfigMap{}, informer.Options{})
	run(t, inf)

	stop := make(chan struct{})
	var writes sync.WaitGroup
	writes.Go(func() {
		for v := 1; ; v++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprint("o", v%20)
			switch v % 7 {
			case 3:
				src.Delete(configMap(name, "gone"))
			case 4:
				src.Add(configMap(name, fmt.Sprint(v)))
			default:
				src.Modify(configMap(name, fmt.Sprint(v)))
			}
		}
	})
	var recs []*recorder
	for i := range 40 {
		r := newRecorder()
		var h toolscache.ResourceEventHandler = r
		if i%2 == 0 {
			h = directRecorder{r}
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
		time.Sleep(time.Millisecond)
	}
	close(stop)
	writes.Wait()

	want := map[string]string{}
	eventually(t, "every handler to catch up with the store", func() bool {
		want = map[string]string{}
		for _, obj := range inf.GetStore().List() {
			cm := obj.(*corev1.ConfigMap)
			want[cm.Name] = cm.Data["v"]
		}
		for _, r := range recs {
			if _, _, held := r.snapshot(); fmt.Sprint(held) != fmt.Sprint(want) {
				return false
			}
		}
		return true
	})
	for i, r := range recs {
		if _, errs, _ := r.snapshot(); len(errs) > 0 {
			t.Errorf("handler %d: %q", i, errs[:min(len(errs), 5)])
		}
	}
}

// A relist that finds an object gone delivers a delete, with the state
// last held, and a removed handler hears nothing more.
func TestRelistAndRemove(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	src.Add(configMap("a", "1"))
	src.Add(configMap("b", "1"))
	inf := informer.New(src, &corev1.ConfigMap{}, informer.Options{})
	kept, removed := newRecorder(), newRecorder()
	if _, err := inf.AddEventHandler(directRecorder{kept}); err != nil {
		t.Fatal(err)
	}
	reg, err := inf.AddEventHandler(removed)
	if err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	eventually(t, "the buffered handler's sync", reg.HasSynced)

	src.DeleteDropWatch(configMap("b", "1"))
	src.ModifyDropWatch(configMap("a", "2"))
	src.ResetWatch()
	eventually(t, "the relist", func() bool { _, _, held := kept.snapshot(); return len(held) == 1 && held["a"] == "2" })
	ev, errs, _ := kept.snapshot()
	slices.Sort(ev[:2]) // the initial list's order is the fake's map's
	if want := []string{"add a 1", "add b 1", "delete b 1", "update a 1>2"}; fmt.Sprint(ev) != fmt.Sprint(want) || len(errs) > 0 {
		t.Errorf("got %q (errors %q), want %q", ev, errs, want)
	}

	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the removed handler's last events", func() bool { _, _, held := removed.snapshot(); return held["a"] == "2" })
	src.Add(configMap("c", "1"))
	eventually(t, "the kept handler", func() bool { _, _, held := kept.snapshot(); return held["c"] == "1" })
	if _, _, held := removed.snapshot(); held["c"] != "" {
		t.Error("a removed handler was handed an event")
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Errorf("removing a handler twice: %v", err)
	}
}

func TestSetAfterStartFails(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	inf := informer.New(src, &corev1.ConfigMap{}, informer.Options{})
	run(t, inf)
	if err := inf.SetTransform(func(o any) (any, error) { return o, nil }); err == nil {
		t.Error("SetTransform after Run: no error")
	}
	if err := inf.SetWatchErrorHandler(func(*toolscache.Reflector, error) {}); err == nil {
		t.Error("SetWatchErrorHandler after Run: no error")
	}
}

// timedCount counts the dated updates it is handed; while block is open
// it holds the delivery goroutine at its first event.
type timedCount struct {
	directRecorder
	block chan struct{}
	mu    sync.Mutex
	dated int
}

func (c *timedCount) OnAddAt(obj any, initial bool, _, _ time.Time) time.Time {
	c.OnAdd(obj, initial)
	return time.Time{}
}

func (c *timedCount) OnDeleteAt(obj any, _, _ time.Time) time.Time {
	c.OnDelete(obj)
	return time.Time{}
}

func (c *timedCount) OnUpdateAt(oldObj, newObj any, changed, delivered time.Time) time.Time {
	if c.block != nil {
		<-c.block
	}
	c.mu.Lock()
	if !changed.IsZero() && !delivered.IsZero() {
		c.dated++
	}
	c.mu.Unlock()
	c.OnUpdate(oldObj, newObj)
	return time.Time{}
}

// However far the informer falls behind its watch, every update is dated
// and observed once: the change time travels with the object through the
// informer's queue.
func TestBacklogLosesNoChangeTime(t *testing.T) {
	const updates = 20_000
	written := metav1.Now()
	cm := func(v int) *corev1.ConfigMap {
		c := configMap(fmt.Sprint("o", v%100), fmt.Sprint(v))
		c.UID = types.UID(c.Name)
		c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "test", Time: &written}}
		return c
	}
	src := fcache.NewFakeControllerSource()
	for v := range 100 {
		src.Add(cm(v))
	}
	var mu sync.Mutex
	observed := 0
	inf := informer.New(src, &corev1.ConfigMap{}, informer.Options{Lag: &informer.Lag{Update: func(float64) { mu.Lock(); observed++; mu.Unlock() }}})
	var ingested atomic.Int64
	if err := inf.SetTransform(func(obj any) (any, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && len(cm.Data["v"]) > 2 { // an update's value: 100 or more
			ingested.Add(1)
		}
		return obj, nil
	}); err != nil {
		t.Fatal(err)
	}
	c := &timedCount{directRecorder: directRecorder{newRecorder()}, block: make(chan struct{})}
	if _, err := inf.AddEventHandler(c); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	for v := 100; v < 100+updates; v++ {
		src.Modify(cm(v))
	}
	// The informer picks the events it times as it ingests them, at the
	// stride its deliveries set (see TestLagSamplesAFlood). Delivery is
	// held at the first update, so the stride stays at one while every
	// update is ingested; once released, the backlog drains faster than
	// any stride is for, and whatever it sets must find no update still
	// to ingest.
	eventually(t, "every update ingested", func() bool { return ingested.Load() == updates })
	close(c.block)
	eventually(t, "every update", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.dated == updates })
	mu.Lock()
	defer mu.Unlock()
	if observed != updates {
		t.Errorf("observed %d updates, want %d", observed, updates)
	}
	if _, errs, _ := c.snapshot(); len(errs) > 0 {
		t.Errorf("%q", errs[:min(len(errs), 5)])
	}
}

// reentrant is a Direct handler that calls back into its informer.
type reentrant struct {
	directRecorder
	inf    *informer.Informer
	remove toolscache.ResourceEventHandlerRegistration
}

func (r reentrant) OnUpdate(oldObj, newObj any) {
	r.inf.HasSynced()
	_ = r.inf.RemoveEventHandler(r.remove)
	r.directRecorder.OnUpdate(oldObj, newObj)
}

// A Direct handler runs on the delivery goroutine, yet may ask whether
// its informer has synced and remove a handler: neither waits for the
// delivery.
func TestDirectHandlerMayCallItsInformer(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	src.Add(configMap("a", "0"))
	inf := informer.New(src, &corev1.ConfigMap{}, informer.Options{})
	other, err := inf.AddEventHandler(newRecorder())
	if err != nil {
		t.Fatal(err)
	}
	r := reentrant{directRecorder: directRecorder{newRecorder()}, inf: inf, remove: other}
	if _, err := inf.AddEventHandler(r); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	src.Modify(configMap("a", "1"))
	eventually(t, "the update", func() bool { _, _, held := r.snapshot(); return held["a"] == "1" })
}
