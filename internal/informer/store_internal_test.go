package informer

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// The store answers every read as client-go's store does, after the same
// random adds, updates, deletes (some through tombstones), replaces and
// indexes added on the way: of ConfigMaps, and of metadata objects in a
// store that packs them, whose reads are new objects DeepEqual to those
// stored.
func TestStoreAsClientGos(t *testing.T) {
	byLabel := func(obj any) ([]string, error) {
		var vs []string
		for k, v := range obj.(metav1.Object).GetLabels() {
			vs = append(vs, k+"="+v)
		}
		return vs, nil
	}
	// The value v is a ConfigMap's data, a metadata object's annotation.
	byData := func(obj any) ([]string, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			return []string{cm.Data["v"]}, nil
		}
		return []string{obj.(metav1.Object).GetAnnotations()["v"]}, nil
	}
	indexers := func() toolscache.Indexers {
		return toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, "label": byLabel}
	}
	for _, compact := range []bool{false, true} {
		for seed := range uint64(20) {
			t.Run(fmt.Sprintf("compact=%v/%d", compact, seed), func(t *testing.T) {
				testStoreAsClientGos(t, seed, compact, indexers, byLabel, byData)
			})
		}
	}
}

func testStoreAsClientGos(t *testing.T, seed uint64, compact bool, indexers func() toolscache.Indexers, byLabel, byData toolscache.IndexFunc) {
	rnd := rand.New(rand.NewPCG(seed, 1))
	want := toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, indexers())
	got := newStore(indexers())
	if compact {
		got.packer = &packer{}
	}
	object := func() metav1.Object {
		om := metav1.ObjectMeta{
			Namespace: []string{"", "a", "b"}[rnd.IntN(3)], Name: fmt.Sprint("cm-", rnd.IntN(12)),
			ResourceVersion: fmt.Sprint(rnd.IntN(1000)),
			Labels:          map[string]string{"x": fmt.Sprint(rnd.IntN(3))},
		}
		if rnd.IntN(2) == 0 {
			om.Labels["y"] = fmt.Sprint(rnd.IntN(2))
		}
		v := fmt.Sprint(rnd.IntN(4))
		if compact {
			om.Annotations = map[string]string{"v": v}
			return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: om}
		}
		return &corev1.ConfigMap{ObjectMeta: om, Data: map[string]string{"v": v}}
	}
	for step := range 300 {
		var errWant, errGot error
		switch op := rnd.IntN(20); {
		case op < 10:
			obj := object()
			errWant, errGot = want.Update(obj), got.Update(obj)
		case op < 15:
			obj := object()
			errWant, errGot = want.Delete(obj), got.Delete(obj)
		case op < 17:
			obj := object()
			key, _ := toolscache.MetaNamespaceKeyFunc(obj)
			tomb := toolscache.DeletedFinalStateUnknown{Key: key, Obj: obj}
			errWant, errGot = want.Delete(tomb), got.Delete(tomb)
		case op < 19:
			var list []any
			for range rnd.IntN(15) {
				list = append(list, object())
			}
			errWant, errGot = want.Replace(slices.Clone(list), "r"), got.Replace(list, "r")
		case step > 100 && len(want.GetIndexers()) == 2:
			errWant = want.AddIndexers(toolscache.Indexers{"data": byData})
			errGot = got.AddIndexers(toolscache.Indexers{"data": byData})
		}
		if (errWant == nil) != (errGot == nil) {
			t.Fatalf("step %d: error %v, client-go's %v", step, errGot, errWant)
		}
		compareStores(t, step, want, got)
	}
	if err := got.AddIndexers(toolscache.Indexers{"label": byLabel}); err == nil {
		t.Error("adding an index twice: no error")
	}
	if packed := countPacked(got); compact != (packed > 0) {
		t.Errorf("compact=%v, and the store holds %d packed objects", compact, packed)
	}
}

func countPacked(s *store) int {
	n := 0
	for _, names := range s.byNS {
		for _, obj := range names {
			if _, ok := obj.(*packedMeta); ok {
				n++
			}
		}
	}
	return n
}

func compareStores(t *testing.T, step int, want toolscache.Indexer, got *store) {
	t.Helper()
	sorted := func(objs []any) []string {
		var keys []string
		for _, o := range objs {
			m := o.(metav1.Object)
			keys = append(keys, m.GetNamespace()+"/"+m.GetName()+"@"+m.GetResourceVersion())
		}
		slices.Sort(keys)
		return keys
	}
	check := func(what string, w, g any) {
		t.Helper()
		if diff := cmp.Diff(w, g); diff != "" {
			t.Fatalf("step %d: %s differs from client-go's (-want +got):\n%s", step, what, diff)
		}
	}
	check("List", sorted(want.List()), sorted(got.List()))
	inOrder := func(objs []any) []string {
		var keys []string
		for _, o := range objs {
			m := o.(metav1.Object)
			keys = append(keys, m.GetNamespace()+"\x00"+m.GetName()+"\x00"+m.GetResourceVersion())
		}
		return keys
	}
	wantSorted := inOrder(want.List())
	slices.Sort(wantSorted)
	check("ListSorted", wantSorted, inOrder(got.ListSorted("", true)))
	for _, ns := range []string{"", "a", "b"} {
		objs, _ := want.ByIndex(toolscache.NamespaceIndex, ns)
		w := inOrder(objs)
		slices.Sort(w)
		check("ListSorted("+ns+")", w, inOrder(got.ListSorted(ns, false)))
	}
	check("ListKeys", slices.Sorted(slices.Values(want.ListKeys())), slices.Sorted(slices.Values(got.ListKeys())))
	for _, key := range want.ListKeys() {
		w, _, _ := want.GetByKey(key)
		g, ok, _ := got.GetByKey(key)
		// A packed object is read as a new one; any other is the one stored.
		if _, packed := w.(*metav1.PartialObjectMetadata); !ok || (packed && (w == g || !reflect.DeepEqual(w, g))) || (!packed && w != g) {
			t.Fatalf("step %d: GetByKey(%q) = %v, %v; want %v", step, key, g, ok, w)
		}
	}
	if _, ok, _ := got.GetByKey("a/missing"); ok {
		t.Fatalf("step %d: GetByKey of a missing key found it", step)
	}
	var w0 any // any object, to tell the test's kind
	if l := want.List(); len(l) > 0 {
		w0 = l[0]
	}
	for index := range want.GetIndexers() {
		check("ListIndexFuncValues("+index+")",
			slices.Sorted(slices.Values(want.ListIndexFuncValues(index))), slices.Sorted(slices.Values(got.ListIndexFuncValues(index))))
		for _, v := range append(want.ListIndexFuncValues(index), "none") {
			w, errW := want.ByIndex(index, v)
			g, errG := got.ByIndex(index, v)
			check("ByIndex("+index+", "+v+")", sorted(w), sorted(g))
			check("ByIndex error", errW == nil, errG == nil)
			wk, _ := want.IndexKeys(index, v)
			gk, _ := got.IndexKeys(index, v)
			check("IndexKeys("+index+", "+v+")", wk, gk)
		}
		var probe any = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Labels: map[string]string{"x": "1", "y": "0"}}, Data: map[string]string{"v": "2"}}
		if _, ok := w0.(*metav1.PartialObjectMetadata); ok {
			probe = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Labels: map[string]string{"x": "1", "y": "0"}, Annotations: map[string]string{"v": "2"}}}
		}
		w, _ := want.Index(index, probe)
		g, _ := got.Index(index, probe)
		check("Index("+index+")", sorted(w), sorted(g))
	}
	if _, err := got.ByIndex("nope", "x"); err == nil {
		t.Fatalf("step %d: ByIndex of an unknown index: no error", step)
	}
	check("LastStoreSyncResourceVersion", want.LastStoreSyncResourceVersion(), got.LastStoreSyncResourceVersion())
}
