package cache_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// BenchmarkMetadataRead measures what reading BenchmarkBytesPerObject's
// objects from a metadata-only cache costs, per object: Get (one object
// by namespace and name, the next object each time) and List (every
// object of the shape, ns/obj and allocs/obj). Rows are
// MetadataRead/<shape>/<Get|List>/<impl>: opkitmeta (cache.Metadata, whose
// cache packs what it holds and makes each object it returns),
// ctrlruntimemeta (controller-runtime's cache of PartialObjectMetadata,
// which deep-copies each).
func BenchmarkMetadataRead(b *testing.B) {
	skipWithMutationDetector(b)
	if _, err := bytesObjectsOnce(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, s := range bytesShapes {
		sel := labels.SelectorFromSet(labels.Set{bytesShapeLabel: s.name})
		var l *cache.Lister[*metav1.PartialObjectMetadata]
		startOpkit(b, ctx, func(c *cache.Cache) error {
			var err error
			l, err = cache.Metadata(c, configMapGVK, cache.TypeOptions{LabelSelector: sel})
			return err
		})
		all, err := l.List("", nil)
		if err != nil || len(all) != bytesObjects {
			b.Fatalf("listed %d: %v", len(all), err)
		}
		keys := make([]types.NamespacedName, len(all))
		for i, o := range all {
			keys[i] = types.NamespacedName{Namespace: o.Namespace, Name: o.Name}
		}
		cr := startCtrlRuntime(b, ctx, sel, newMeta())
		b.Run(s.name+"/Get/opkitmeta", func(b *testing.B) {
			benchGets(b, keys, func(k types.NamespacedName) error { _, err := l.Get(k.Namespace, k.Name); return err })
		})
		b.Run(s.name+"/Get/ctrlruntimemeta", func(b *testing.B) {
			benchGets(b, keys, func(k types.NamespacedName) error { return cr.Get(ctx, k, newMeta()) })
		})
		b.Run(s.name+"/List/opkitmeta", func(b *testing.B) {
			benchLists(b, func() (int, error) { got, err := l.List("", nil); return len(got), err })
		})
		b.Run(s.name+"/List/ctrlruntimemeta", func(b *testing.B) {
			benchLists(b, func() (int, error) {
				list := &metav1.PartialObjectMetadataList{}
				list.SetGroupVersionKind(configMapGVK.GroupVersion().WithKind("ConfigMapList"))
				err := cr.List(ctx, list)
				return len(list.Items), err
			})
		})
	}
}

func newMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(configMapGVK)
	return m
}

func benchGets(b *testing.B, keys []types.NamespacedName, get func(types.NamespacedName) error) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := get(keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func benchLists(b *testing.B, list func() (int, error)) {
	b.ReportAllocs()
	objs := 0
	for b.Loop() {
		n, err := list()
		if err != nil || n != bytesObjects {
			b.Fatalf("listed %d: %v", n, err)
		}
		objs += n
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(objs), "ns/obj")
	b.ReportMetric(testing.AllocsPerRun(1, func() { _, _ = list() })/bytesObjects, "allocs/obj")
}
