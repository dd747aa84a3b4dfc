package cache

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/opkit-dev/opkit/internal/informer"
)

func stamped(name string, write time.Time, del *metav1.Time) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(write.Add(-time.Hour)),
		DeletionTimestamp: del,
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "a", Time: &metav1.Time{Time: write.Add(-time.Minute)}},
			{Manager: "b", Time: &metav1.Time{Time: write}},
		},
	}}
}

// dates is a TimedEventHandler that keeps each event's change time, as
// "update a 1700000000" (0 for none), and checks that the objects it is
// handed are stripped.
type dates struct {
	mu   sync.Mutex
	got  []string
	errs []string
}

func (d *dates) note(event string, obj any, changed time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	cm := obj.(*corev1.ConfigMap)
	if cm.ManagedFields != nil {
		d.errs = append(d.errs, fmt.Sprintf("%s %s: managedFields not stripped", event, cm.Name))
	}
	var at int64
	if !changed.IsZero() {
		at = changed.Unix()
	}
	d.got = append(d.got, fmt.Sprintf("%s %s %d", event, cm.Name, at))
}

func (d *dates) OnAdd(any, bool)   { panic("the plain methods are not called with Lag") }
func (d *dates) OnUpdate(any, any) { panic("the plain methods are not called with Lag") }
func (d *dates) OnDelete(any)      { panic("the plain methods are not called with Lag") }
func (d *dates) OnAddAt(obj any, _ bool, changed, _ time.Time) time.Time {
	d.note("add", obj, changed)
	return time.Time{}
}

func (d *dates) OnUpdateAt(_, obj any, changed, _ time.Time) time.Time {
	d.note("update", obj, changed)
	return time.Time{}
}

func (d *dates) OnDeleteAt(obj any, changed, _ time.Time) time.Time {
	d.note("delete", obj, changed)
	return time.Time{}
}

func (d *dates) snapshot() ([]string, []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.got), slices.Clone(d.errs)
}

// An informer with Lag dates each event from the timestamps the cache's
// transform strips, read before it strips them: the newest managedFields
// time for adds and updates, the later of it and the deletionTimestamp
// for deletes, and none for an add of the initial list, a delete without
// a deletionTimestamp, an update that changed nothing (a relist's) or an
// inferred delete. Each dated event is observed once.
func TestEventsDatedBeforeStripping(t *testing.T) {
	write := time.Unix(1_700_000_000, 0)
	deleted := metav1.NewTime(write.Add(time.Second))
	src := fcache.NewFakeControllerSource()
	src.Add(stamped("initial", write, nil))
	var mu sync.Mutex
	observed := map[string]int{}
	o := func(event string) func(float64) {
		return func(float64) { mu.Lock(); observed[event]++; mu.Unlock() }
	}
	inf := informer.New(src, &corev1.ConfigMap{}, informer.Options{Lag: &informer.Lag{Add: o("add"), Update: o("update"), Delete: o("delete")}})
	if err := inf.SetTransform(ingestTransform(TypeOptions{}, nil, newCompactor(), nil)); err != nil {
		t.Fatal(err)
	}
	d := &dates{}
	if _, err := inf.AddEventHandler(informer.AsDirect(d)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { inf.RunWithContext(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("no sync")
	}

	src.Add(stamped("a", write, nil))
	src.Modify(stamped("a", write.Add(2*time.Second), nil))
	src.Delete(stamped("a", write.Add(2*time.Second), nil))
	src.Add(stamped("b", write, nil))
	src.Modify(stamped("b", write, &deleted))
	src.Delete(stamped("b", write, &deleted))
	src.Add(stamped("c", write, nil))
	src.Add(stamped("d", write, nil))
	// A relist that finds c changed, d gone and initial the same.
	src.ModifyDropWatch(stamped("c", write.Add(3*time.Second), nil))
	src.DeleteDropWatch(stamped("d", write, nil))
	src.ResetWatch()

	w := write.Unix()
	want := []string{
		"add initial 0",
		fmt.Sprint("add a ", w), fmt.Sprint("update a ", w+2), "delete a 0",
		fmt.Sprint("add b ", w), fmt.Sprint("update b ", w+1), fmt.Sprint("delete b ", w+1),
		fmt.Sprint("add c ", w), fmt.Sprint("add d ", w),
		// The relist: the inferred delete first, then the list's
		// objects, in its order, which the fake does not fix.
		"delete d 0",
	}
	relisted := []string{fmt.Sprint("update c ", w+3), "update initial 0"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, errs := d.snapshot()
		if len(got) >= len(want)+len(relisted) {
			slices.Sort(got[len(want):])
			if fmt.Sprint(got) != fmt.Sprint(append(want, relisted...)) || len(errs) > 0 {
				t.Errorf("events\n got %q\nwant %q\nerrors %q", got, append(want, relisted...), errs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out with %q", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := map[string]int{"add": 4, "update": 3, "delete": 1}; fmt.Sprint(observed) != fmt.Sprint(want) {
		t.Errorf("observed %v, want %v", observed, want)
	}
}

// capturingInformer keeps the handlers added to it.
type capturingInformer struct {
	toolscache.SharedIndexInformer
	added []toolscache.ResourceEventHandler
}

func (c *capturingInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	c.added = append(c.added, h)
	return c.SharedIndexInformer.AddEventHandler(h)
}

// updateTimes is a TimedEventHandler that keeps the change times of updates.
type updateTimes struct {
	toolscache.ResourceEventHandlerFuncs
	got *[]time.Time
}

func (u updateTimes) OnUpdateAt(_, _ any, at, _ time.Time) time.Time {
	*u.got = append(*u.got, at)
	return time.Time{}
}
func (updateTimes) OnAddAt(any, bool, time.Time, time.Time) time.Time { return time.Time{} }
func (updateTimes) OnDeleteAt(any, time.Time, time.Time) time.Time    { return time.Time{} }

// A TimedEventHandler is handed to the informers of a view that replaces
// another (SetSlots), where the cache also drops the adds the old view
// handed it, as a TimedEventHandler still.
func TestTimedHandlerOnReplacingView(t *testing.T) {
	write := time.Unix(1_700_000_000, 0)
	newInformer := func() *capturingInformer {
		return &capturingInformer{SharedIndexInformer: informer.New(&toolscache.ListWatch{}, &corev1.ConfigMap{}, informer.Options{})}
	}
	oldInf, inf := newInformer(), newInformer()
	old := &view{informers: []*nsInformer{{informer: oldInf, indexer: oldInf.GetIndexer()}}}
	next := &view{informers: []*nsInformer{{informer: inf, indexer: inf.GetIndexer()}}}
	var got []time.Time
	h := &HandlerRegistration{handler: updateTimes{got: &got}}
	if err := h.attachTo(next, old); err != nil {
		t.Fatal(err)
	}
	added, ok := inf.added[len(inf.added)-1].(informer.TimedEventHandler)
	if !ok {
		t.Fatalf("the handler on the new view, %T, is not a TimedEventHandler", inf.added[len(inf.added)-1])
	}
	added.OnUpdateAt(stamped("a", write, nil), stamped("a", write, nil), write, time.Now())
	if len(got) != 1 || !got[0].Equal(write) {
		t.Errorf("change times %v, want [%v]", got, write)
	}
}
