package informer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/opkit-dev/opkit/internal/informer"
)

// countingSource counts the lists that reach src.
func countingSource(src *fcache.FakeControllerSource, lists *atomic.Int64) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			lists.Add(1)
			return src.List(opts)
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return src.Watch(opts)
		},
	}
}

// Snapshot is the store's objects with the resource version they are the
// state at; an informer whose first list is another's snapshot watches
// from there, and sees every change made after it, without listing.
func TestSnapshotSeedsAnotherInformer(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	src.Add(configMap("a", "1"))
	src.Add(configMap("b", "1"))
	first := informer.New(src, &corev1.ConfigMap{}, informer.Options{})
	held := newRecorder()
	if _, err := first.AddEventHandler(directRecorder{held}); err != nil {
		t.Fatal(err)
	}
	if objs, rv := first.Snapshot(); objs != nil || rv != "" {
		t.Errorf("before sync, Snapshot returned %d objects at %q, want none", len(objs), rv)
	}
	run(t, first)
	src.Modify(configMap("a", "2"))
	eventually(t, "the change to a", func() bool { _, _, h := held.snapshot(); return h["a"] == "2" })

	objs, rv := first.Snapshot()
	if rv == "" {
		t.Skip("client-go's AtomicFIFO is off: the store learns no resource version")
	}
	var names []string
	items := make([]corev1.ConfigMap, 0, len(objs))
	for _, o := range objs {
		cm := o.(*corev1.ConfigMap)
		names = append(names, cm.Name+"="+cm.Data["v"])
		items = append(items, *cm)
	}
	slices.Sort(names)
	if want := []string{"a=2", "b=1"}; !slices.Equal(names, want) || rv != "3" {
		t.Fatalf("Snapshot: %q at %q, want %q at the last change's, \"3\"", names, rv, want)
	}
	// Changes after the snapshot, before the seeded informer starts: it
	// must see them from its watch.
	src.Modify(configMap("b", "2"))
	src.Add(configMap("c", "1"))

	var lists, seeded atomic.Int64
	second := informer.New(countingSource(src, &lists), &corev1.ConfigMap{}, informer.Options{})
	if err := second.SetFirstList(func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		seeded.Add(1)
		return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: items}, nil
	}); err != nil {
		t.Fatal(err)
	}
	got := newRecorder()
	if _, err := second.AddEventHandler(directRecorder{got}); err != nil {
		t.Fatal(err)
	}
	run(t, second)
	src.Delete(configMap("a", "2"))
	eventually(t, "the seeded informer's events", func() bool { ev, _, _ := got.snapshot(); return len(ev) >= 5 })
	ev, errs, _ := got.snapshot()
	slices.Sort(ev[:2])
	if want := []string{"add a 2", "add b 1", "update b 1>2", "add c 1", "delete a 2"}; fmt.Sprint(ev) != fmt.Sprint(want) || len(errs) > 0 {
		t.Errorf("seeded informer got %q (errors %q), want %q", ev, errs, want)
	}
	if lists.Load() != 0 || seeded.Load() != 1 {
		t.Errorf("the seeded informer listed %d times from its source and %d from its seed, want 0 and 1", lists.Load(), seeded.Load())
	}
	if err := second.SetFirstList(nil); err == nil {
		t.Error("SetFirstList after Run succeeded, want an error")
	}
}

// A first list that fails leaves the informer to list from its source.
func TestFailedFirstListListsInFull(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	src.Add(configMap("a", "1"))
	var lists atomic.Int64
	inf := informer.New(countingSource(src, &lists), &corev1.ConfigMap{}, informer.Options{})
	if err := inf.SetFirstList(func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		return nil, errors.New("resource version too old")
	}); err != nil {
		t.Fatal(err)
	}
	got := newRecorder()
	if _, err := inf.AddEventHandler(directRecorder{got}); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	if _, _, held := got.snapshot(); held["a"] != "1" || lists.Load() != 1 {
		t.Errorf("after a failed first list: held %v after %d lists, want a=1 after 1", held, lists.Load())
	}
}
