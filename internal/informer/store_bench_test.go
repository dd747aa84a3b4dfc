package informer

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

const (
	readObjects    = 10000
	readNamespaces = 20
)

// readShapes are the metadata of pkg/cache's BenchmarkBytesPerObject
// shapes, as a metadata informer stores them (managed fields and the
// last-applied annotation stripped, equal maps and owner references
// shared).
var readShapes = []struct {
	name   string
	object func(i int, labels, annotations map[string]string, refs []metav1.OwnerReference) *metav1.PartialObjectMetadata
}{
	{"small", func(i int, labels, _ map[string]string, _ []metav1.OwnerReference) *metav1.PartialObjectMetadata {
		return readObject(i, fmt.Sprintf("cm-%05d", i), labels, nil, nil)
	}},
	{"realistic", func(i int, labels, annotations map[string]string, refs []metav1.OwnerReference) *metav1.PartialObjectMetadata {
		return readObject(i, fmt.Sprintf("shop-%04d-%d", i/4, i%4), labels, annotations, refs)
	}},
}

func readObject(i int, name string, labels, annotations map[string]string, refs []metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: fmt.Sprintf("ns-%02d", i%readNamespaces),
			UID:               types.UID(fmt.Sprintf("6f1c2a3e-0b4d-4c5e-9f60-%012d", i)),
			ResourceVersion:   fmt.Sprint(100000 + i),
			CreationTimestamp: metav1.Unix(1700000000+int64(i), 0),
			Labels:            labels, Annotations: annotations, OwnerReferences: refs,
		},
	}
}

// BenchmarkStoreRead measures what a read of a metadata object costs from
// a store that holds it as it is (held, as before packing) and from one
// that packs it (packed), side by side: Get is one GetByKey, List the
// store's List of all readObjects objects (ns/obj, allocs/obj per object),
// ListSorted the same sorted by namespace and name, as a packed Lister's
// List reads them,
// Update what the informer does to store an update (swap: the object
// packed, the old one unpacked for indexes and handlers), with an index
// as pkg/cache's registrations always have one. Rows are
// StoreRead/<shape>/<Get|List|ListSorted|Update>/<held|packed>.
func BenchmarkStoreRead(b *testing.B) {
	yes := true
	labels := map[string]string{"app": "shop", "bench.opkit.dev/shape": "realistic"}
	annotations := map[string]string{"shop.example.com/team": "payments"}
	refs := []metav1.OwnerReference{{APIVersion: "shop.example.com/v1", Kind: "Shop", Name: "shop", UID: "u", Controller: &yes, BlockOwnerDeletion: &yes}}
	for _, shape := range readShapes {
		stores := map[string]*store{}
		var keys []string
		for _, impl := range []string{"held", "packed"} {
			s := newStore(toolscache.Indexers{
				toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
				"count":                   func(any) ([]string, error) { return nil, nil },
			})
			if impl == "packed" {
				s.packer = &packer{}
			}
			for i := range readObjects {
				obj := shape.object(i, labels, annotations, refs)
				if err := s.Add(obj); err != nil {
					b.Fatal(err)
				}
				if impl == "held" {
					keys = append(keys, obj.Namespace+"/"+obj.Name)
				}
			}
			stores[impl] = s
		}
		for _, impl := range []string{"held", "packed"} {
			s := stores[impl]
			b.Run(shape.name+"/Get/"+impl, func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, ok, _ := s.GetByKey(keys[i%readObjects]); !ok {
						b.Fatal("missing")
					}
					i++
				}
			})
			b.Run(shape.name+"/List/"+impl, func(b *testing.B) {
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					n += len(s.List())
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/obj")
				b.ReportMetric(testing.AllocsPerRun(1, func() { s.List() })/readObjects, "allocs/obj")
			})
			b.Run(shape.name+"/ListSorted/"+impl, func(b *testing.B) {
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					n += len(s.ListSorted("", true))
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/obj")
			})
			b.Run(shape.name+"/Update/"+impl, func(b *testing.B) {
				objs := make([]*metav1.PartialObjectMetadata, readObjects)
				for i := range objs {
					objs[i] = shape.object(i, labels, annotations, refs)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, ok, err := s.swap(objs[i%readObjects]); !ok || err != nil {
						b.Fatal("missing", err)
					}
					i++
				}
			})
		}
	}
}
