package cache

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/internal/informerlag"
)

func stamped(name string, write time.Time, del *metav1.Time) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, ResourceVersion: "2",
		CreationTimestamp: metav1.NewTime(write.Add(-time.Hour)),
		DeletionTimestamp: del,
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "a", Time: &metav1.Time{Time: write.Add(-time.Minute)}},
			{Manager: "b", Time: &metav1.Time{Time: write}},
		},
	}}
}

// The change times are read before the stripping transform and found again
// by the stripped object: the newest managedFields time for adds and
// updates, the later of it and the deletionTimestamp for deletes, none
// for a delete without a deletionTimestamp, a resync or an inferred
// delete.
func TestStampsReadBeforeStripping(t *testing.T) {
	write := time.Unix(1_700_000_000, 0)
	deleted := metav1.NewTime(write.Add(time.Second))
	s := informerlag.New(informerlag.Observers{})
	ingest := s.Transform(ingestTransform(TypeOptions{}, nil, newCompactor()))
	obj, err := ingest(stamped("a", write, nil))
	if err != nil {
		t.Fatal(err)
	}
	if mf := obj.(*corev1.ConfigMap).ManagedFields; mf != nil {
		t.Fatalf("managedFields not stripped: %v", mf)
	}
	gone, _ := ingest(stamped("b", write, &deleted))
	old := stamped("a", write, nil)
	old.ResourceVersion = "1"
	for _, tc := range []struct {
		name      string
		got, want time.Time
	}{
		{"add", s.AddTime(obj), write},
		{"update", s.UpdateTime(old, obj), write},
		{"resync", s.UpdateTime(obj, obj), time.Time{}},
		{"delete without deletionTimestamp", s.DeleteTime(obj), time.Time{}},
		{"delete", s.DeleteTime(gone), deleted.Time},
		{"update that starts a deletion", s.UpdateTime(old, gone), deleted.Time},
		{"not ingested", s.AddTime(stamped("c", write, nil)), time.Time{}},
	} {
		if !tc.got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// With metrics, an informer keeps its own lag listener only while no
// handler is added through the cache, which observes the lag instead: one
// listener fewer for the informer to feed. A removed handler's lag
// handler, and the listener's, are released, so that the tracker keeps no
// change times for them.
func TestLagListenerOnlyWithoutHandlers(t *testing.T) {
	inf := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	i := &nsInformer{informer: inf, lag: informerlag.New(informerlag.Observers{})}
	if err := i.listenIfUnheard(); err != nil {
		t.Fatal(err)
	}
	listening := func(want bool, handlers int, when string) {
		t.Helper()
		if got := i.lagListener != nil; got != want {
			t.Errorf("%s: lag listener %v, want %v", when, got, want)
		}
		if got := i.lag.Handlers(); got != handlers {
			t.Errorf("%s: %d lag handlers not released, want %d", when, got, handlers)
		}
	}
	listening(true, 1, "no handler")
	add := func() toolscache.ResourceEventHandlerRegistration {
		lh := i.lag.Handler(toolscache.ResourceEventHandlerFuncs{})
		reg, err := i.addHandler(lh, lh)
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	a := add()
	listening(false, 1, "one handler")
	b := add()
	listening(false, 2, "two handlers")
	if err := i.removeHandler(a); err != nil {
		t.Fatal(err)
	}
	listening(false, 1, "one handler left")
	if err := i.removeHandler(b); err != nil {
		t.Fatal(err)
	}
	listening(true, 1, "every handler removed")
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

func (u updateTimes) OnUpdateAt(_, _ any, at, _ time.Time)  { *u.got = append(*u.got, at) }
func (updateTimes) OnAddAt(any, bool, time.Time, time.Time) {}
func (updateTimes) OnDeleteAt(any, time.Time, time.Time)    {}

// A TimedEventHandler gets the change times on the informers of a view
// that replaces another (SetSlots), where the cache also drops the adds
// the old view handed it.
func TestTimedHandlerOnReplacingView(t *testing.T) {
	write := time.Unix(1_700_000_000, 0)
	lag := informerlag.New(informerlag.Observers{Update: func(float64) {}})
	newInformer := func() *capturingInformer {
		return &capturingInformer{SharedIndexInformer: toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.ConfigMap{}, 0, toolscache.Indexers{})}
	}
	oldInf, inf := newInformer(), newInformer()
	old := &view{informers: []*nsInformer{{informer: oldInf, indexer: oldInf.GetIndexer()}}}
	next := &view{informers: []*nsInformer{{informer: inf, indexer: inf.GetIndexer(), lag: lag}}}
	var got []time.Time
	h := &HandlerRegistration{handler: updateTimes{got: &got}}
	if err := h.attachTo(next, old); err != nil {
		t.Fatal(err)
	}
	obj, err := lag.Transform(func(obj any) (any, error) { return obj, nil })(stamped("a", write, nil))
	if err != nil {
		t.Fatal(err)
	}
	prev := stamped("a", write, nil)
	prev.ResourceVersion = "1"
	inf.added[len(inf.added)-1].OnUpdate(prev, obj)
	if len(got) != 1 || !got[0].Equal(write) {
		t.Errorf("change times %v, want [%v]", got, write)
	}
}
