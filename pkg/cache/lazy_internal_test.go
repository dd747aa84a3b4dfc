package cache

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func newTestLazy() *LazyLister[*corev1.ConfigMap] {
	return &LazyLister[*corev1.ConfigMap]{
		meta:     &Lister[*metav1.PartialObjectMetadata]{reg: &registration{c: &Cache{}}},
		held:     map[lazyKey]heldObject[*corev1.ConfigMap]{},
		inflight: map[lazyKey]*lazyFetch[*corev1.ConfigMap]{},
	}
}

func configMapAt(rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: rv}}
}

func metadataAt(rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: rv}}
}

// fetched runs a fetch of k that finds obj, as Get does, with the metadata
// at metaRV; it fails the test unless the caller would have fetched.
func fetched(t *testing.T, l *LazyLister[*corev1.ConfigMap], metaRV string, obj *corev1.ConfigMap) *lazyFetch[*corev1.ConfigMap] {
	t.Helper()
	k := lazyKey{"ns", "cm"}
	f, own, _, ok := l.lookup(k, metaRV)
	if ok || !own {
		t.Fatalf("lookup at %s: held %v, own fetch %v; want a fetch of our own", metaRV, ok, own)
	}
	f.obj = obj
	l.finish(k, f)
	return f
}

// held returns the object a Get at metaRV would return without a fetch.
func held(l *LazyLister[*corev1.ConfigMap], metaRV string) *corev1.ConfigMap {
	_, _, obj, ok := l.lookup(lazyKey{"ns", "cm"}, metaRV)
	if !ok {
		delete(l.inflight, lazyKey{"ns", "cm"}) // the fetch lookup began
		return nil
	}
	return obj
}

// A fetch that finds the object newer than the metadata (at 10 while the
// informer is at 8) is held while the metadata is at 8, kept when the
// informer catches up to 10, and dropped at 11.
func TestLazyKeepsAFetchNewerThanTheMetadata(t *testing.T) {
	l := newTestLazy()
	newer := configMapAt("10")
	fetched(t, l, "8", newer)
	if got := held(l, "8"); got != newer {
		t.Fatalf("Get with the metadata at 8 = %v, want the fetched object at 10", got)
	}
	l.changed(metadataAt("10"), false)
	if got := held(l, "10"); got != newer {
		t.Fatalf("Get once the informer caught up to 10 = %v, want the object held", got)
	}
	l.changed(metadataAt("11"), false)
	if got := held(l, "11"); got != nil {
		t.Fatalf("Get at 11 = held object at %s, want a fetch", got.ResourceVersion)
	}
}

// A change or delete seen while a fetch is under way keeps its result from
// being held: it may predate the change.
func TestLazyChangeDuringFetchIsNotHeld(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(l *LazyLister[*corev1.ConfigMap])
	}{
		{"update", func(l *LazyLister[*corev1.ConfigMap]) { l.changed(metadataAt("12"), false) }},
		{"delete", func(l *LazyLister[*corev1.ConfigMap]) { l.changed(metadataAt("11"), true) }},
		{"tombstone", func(l *LazyLister[*corev1.ConfigMap]) {
			l.changed(toolscache.DeletedFinalStateUnknown{Key: "ns/cm", Obj: metadataAt("11")}, true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLazy()
			k := lazyKey{"ns", "cm"}
			f, own, _, _ := l.lookup(k, "11")
			if !own {
				t.Fatal("the first lookup does not fetch")
			}
			if g, own, _, _ := l.lookup(k, "11"); own || g != f || f.joined != 1 {
				t.Fatalf("a second lookup at 11: own %v, same fetch %v, joined %d; want it to join", own, g == f, f.joined)
			}
			tc.change(l)
			f.obj = configMapAt("11")
			l.finish(k, f)
			if len(l.held) != 0 {
				t.Errorf("held %v after a change during the fetch, want nothing", l.held)
			}
			select {
			case <-f.done:
			default:
				t.Error("the fetch's waiters were not released")
			}
		})
	}
}
