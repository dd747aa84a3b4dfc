package informer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// The store answers every read as client-go's store does, after the same
// random adds, updates, deletes (some through tombstones), replaces and
// indexes added on the way.
func TestStoreAsClientGos(t *testing.T) {
	byLabel := func(obj any) ([]string, error) {
		cm := obj.(*corev1.ConfigMap)
		var vs []string
		for k, v := range cm.Labels {
			vs = append(vs, k+"="+v)
		}
		return vs, nil
	}
	byData := func(obj any) ([]string, error) { return []string{obj.(*corev1.ConfigMap).Data["v"]}, nil }
	indexers := func() toolscache.Indexers {
		return toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, "label": byLabel}
	}
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 1))
			want := toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, indexers())
			got := newStore(indexers())
			object := func() *corev1.ConfigMap {
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{
						Namespace: []string{"", "a", "b"}[rnd.IntN(3)], Name: fmt.Sprint("cm-", rnd.IntN(12)),
						ResourceVersion: fmt.Sprint(rnd.IntN(1000)),
						Labels:          map[string]string{"x": fmt.Sprint(rnd.IntN(3))},
					},
					Data: map[string]string{"v": fmt.Sprint(rnd.IntN(4))},
				}
				if rnd.IntN(2) == 0 {
					cm.Labels["y"] = fmt.Sprint(rnd.IntN(2))
				}
				return cm
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
		})
	}
}

func compareStores(t *testing.T, step int, want toolscache.Indexer, got *store) {
	t.Helper()
	sorted := func(objs []any) []string {
		var keys []string
		for _, o := range objs {
			cm := o.(*corev1.ConfigMap)
			keys = append(keys, cm.Namespace+"/"+cm.Name+"@"+cm.ResourceVersion)
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
	check("ListKeys", slices.Sorted(slices.Values(want.ListKeys())), slices.Sorted(slices.Values(got.ListKeys())))
	for _, key := range want.ListKeys() {
		w, _, _ := want.GetByKey(key)
		g, ok, _ := got.GetByKey(key)
		if !ok || w != g {
			t.Fatalf("step %d: GetByKey(%q) = %v, %v; want %v", step, key, g, ok, w)
		}
	}
	if _, ok, _ := got.GetByKey("a/missing"); ok {
		t.Fatalf("step %d: GetByKey of a missing key found it", step)
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
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Labels: map[string]string{"x": "1", "y": "0"}}, Data: map[string]string{"v": "2"}}
		w, _ := want.Index(index, probe)
		g, _ := got.Index(index, probe)
		check("Index("+index+")", sorted(w), sorted(g))
	}
	if _, err := got.ByIndex("nope", "x"); err == nil {
		t.Fatalf("step %d: ByIndex of an unknown index: no error", step)
	}
	check("LastStoreSyncResourceVersion", want.LastStoreSyncResourceVersion(), got.LastStoreSyncResourceVersion())
}
