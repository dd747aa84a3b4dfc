package cache_test

import (
	"cmp"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// A metadata-only Lister, whose cache packs what it holds, reads each
// object as the API server's metadata client does (less what the cache
// strips): owner references with and without their bools, finalizers, a
// generateName, a deletion in progress, an object with no labels.
func TestMetadataReadsEqualTheServers(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	cl := writeClient(t)
	yes, no := true, false
	objs := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "owned", Namespace: ns, Labels: map[string]string{"app": "a"},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "ConfigMap", Name: "csa", UID: "6f1c2a3e-0b4d-4c5e-9f60-000000000001", Controller: &yes},
				{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "not-a-uuid", BlockOwnerDeletion: &no},
			}}},
		{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-", Namespace: ns, Finalizers: []string{"example.com/hold"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "deleting", Namespace: ns, Finalizers: []string{"example.com/hold"}}},
	}
	for _, o := range objs {
		if err := cl.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Delete(t.Context(), objs[2]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, o := range objs[1:] {
			o.Finalizers = nil
			_ = cl.Update(t.Context(), o)
		}
	})

	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Metadata(c, configMapGVK, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	mc, err := metadata.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	list, err := mc.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) < 6 {
		t.Fatalf("the API server lists %d ConfigMaps, want the 6 made and kube-root-ca.crt", len(list.Items))
	}
	cached, err := cms.List(ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cached) != len(list.Items) {
		t.Fatalf("the cache lists %d ConfigMaps, the API server %d", len(cached), len(list.Items))
	}
	for i := range list.Items {
		want := &list.Items[i]
		want.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
		want.ManagedFields = nil
		if a := want.Annotations; a != nil {
			delete(a, corev1.LastAppliedConfigAnnotation)
			if len(a) == 0 {
				want.Annotations = nil
			}
		}
		if err := cms.WaitFor(t.Context(), want); err != nil {
			t.Fatal(err)
		}
		got, err := cms.Get(ns, want.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: cached\n%#v\nthe API server's\n%#v", want.Name, got.ObjectMeta, want.ObjectMeta)
		}
		if i := indexOf(cached, want.Name); i < 0 || !reflect.DeepEqual(cached[i], want) {
			t.Errorf("%s: List does not return it as Get does", want.Name)
		}
	}
	if d, _ := cms.Get(ns, "deleting"); d.DeletionTimestamp == nil {
		t.Error("the object being deleted has no deletionTimestamp in the cache")
	}
	checkSorted(t, "List of one namespace's cache", cached)

	// One informer for every namespace: Lists of one and of all are sorted.
	all := newCache(t, cache.Options{})
	allCMs, err := cache.Metadata(all, configMapGVK, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, all)
	for _, namespace := range []string{ns, ""} {
		got, err := allCMs.List(namespace, nil)
		if err != nil {
			t.Fatal(err)
		}
		if namespace == ns && len(got) != len(cached) {
			t.Errorf("List(%s) of a cluster-wide cache: %d objects, want %d", ns, len(got), len(cached))
		}
		checkSorted(t, "List("+namespace+") of a cluster-wide cache", got)
	}
}

func checkSorted(t *testing.T, what string, objs []*metav1.PartialObjectMetadata) {
	t.Helper()
	if !slices.IsSortedFunc(objs, func(a, b *metav1.PartialObjectMetadata) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	}) {
		t.Errorf("%s is not sorted by namespace and name", what)
	}
}

func indexOf(objs []*metav1.PartialObjectMetadata, name string) int {
	for i, o := range objs {
		if o.Name == name {
			return i
		}
	}
	return -1
}

// Each read of a metadata-only Lister is a new object: a reader that sets
// a field of its own changes nothing cached, and one that modifies a map
// it shares with the cache is reported by the mutation detector.
func TestMetadataReadsAreNewObjectsSharingMaps(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}, Mutations: cache.MutationOptions{Detect: true, Interval: -1}})
	cms, err := cache.Metadata(c, configMapGVK, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	a, err := cms.Get(ns, "csa")
	if err != nil {
		t.Fatal(err)
	}
	b, err := cms.Get(ns, "csa")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("two Gets returned one object: the metadata is not packed")
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("two Gets' labels are two maps: reads copy them")
	}
	a.UID = types.UID("changed")
	if again, _ := cms.Get(ns, "csa"); again.UID != b.UID {
		t.Errorf("a reader's own field reached the cache: uid %q", again.UID)
	}
	a.Labels["app"] = "changed" // the bug the detector must catch
	err = c.CheckMutations()
	a.Labels["app"] = "a"
	var me *cache.MutationError
	if !errors.As(err, &me) || me.Name != "csa" || len(me.Fields) != 1 || me.Fields[0] != "metadata.labels.app" {
		t.Fatalf("CheckMutations = %v, want a report of metadata.labels.app of csa", err)
	}
	_ = c.CheckMutations() // takes in the label set back
}
