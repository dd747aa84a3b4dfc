package cache_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// byOwnerName is an index ported as-is from controller-runtime: it holds
// only the owner's name, which controller-runtime scopes to a namespace.
func byOwnerName(cm *corev1.ConfigMap) []string {
	if o := cm.Labels["owner"]; o != "" {
		return []string{o}
	}
	return nil
}

// createOwned creates, in each namespace, ConfigMaps named names (in that
// order) whose owner label is owner.
func createOwned(t *testing.T, owner string, names []string, namespaces ...string) {
	t.Helper()
	cl := writeClient(t)
	for _, ns := range namespaces {
		for _, n := range names {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns, Labels: map[string]string{"owner": owner}}}
			if err := cl.Create(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func keys(objs []*corev1.ConfigMap) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Namespace + "/" + o.Name
	}
	return out
}

// ByIndex searches every namespace (unlike controller-runtime's scoped
// field indexes); ByIndexInNamespace finds one namespace's objects only,
// whether one informer caches every namespace or one caches each.
func TestByIndexInNamespace(t *testing.T) {
	a, b := env.Namespace(t), env.Namespace(t)
	if b < a {
		a, b = b, a
	}
	// An owner of this run's own: the cluster-wide index also finds the
	// objects of earlier runs (go test -count), whose namespaces the test
	// control plane never finishes deleting.
	web := "web-" + a
	createOwned(t, web, []string{"web-1", "web-0"}, a, b)
	for _, scoped := range []bool{false, true} {
		t.Run(fmt.Sprintf("scoped=%v", scoped), func(t *testing.T) {
			opts := cache.Options{}
			if scoped {
				opts.Namespaces = []string{b, a}
			}
			c := newCache(t, opts)
			cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := cms.AddIndex("owner", byOwnerName); err != nil {
				t.Fatal(err)
			}
			start(t, c)

			everywhere, err := cms.ByIndex("owner", web)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{a + "/web-0", a + "/web-1", b + "/web-0", b + "/web-1"}
			if diff := cmp.Diff(want, keys(everywhere)); diff != "" {
				t.Errorf("ByIndex(owner, %s): every namespace, sorted (-want +got):\n%s", web, diff)
			}
			inB, err := cms.ByIndexInNamespace(b, "owner", web)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want[2:], keys(inB)); diff != "" {
				t.Errorf("ByIndexInNamespace(%s, owner, %s) (-want +got):\n%s", b, web, diff)
			}
			if got, err := cms.ByIndexInNamespace(a, "owner", "nobody"); err != nil || len(got) != 0 {
				t.Errorf("ByIndexInNamespace of a value nobody holds = %v, %v; want nothing", keys(got), err)
			}
			if _, err := cms.ByIndexInNamespace("", "owner", web); err == nil || !strings.Contains(err.Error(), "use ByIndex") {
				t.Errorf("ByIndexInNamespace without a namespace = %v, want an error pointing at ByIndex", err)
			}
			if _, err := cms.ByIndexInNamespace(a, "nonesuch", web); err == nil || !strings.Contains(err.Error(), "AddIndex") {
				t.Errorf("ByIndexInNamespace of an index never added = %v, want an error naming AddIndex", err)
			}
		})
	}
}

func TestByIndexInNamespaceOfAClusterScopedType(t *testing.T) {
	c := newCache(t, cache.Options{})
	nss, err := cache.Register[*corev1.Namespace](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := nss.AddIndex("phase", func(ns *corev1.Namespace) []string { return []string{string(ns.Status.Phase)} }); err != nil {
		t.Fatal(err)
	}
	start(t, c)
	if _, err := nss.ByIndexInNamespace("default", "phase", "Active"); err == nil {
		t.Error("ByIndexInNamespace of a cluster-scoped type succeeded")
	}
	if got, err := nss.ByIndex("phase", "Active"); err != nil || len(got) == 0 {
		t.Errorf("ByIndex(phase, Active) = %d namespaces, %v", len(got), err)
	}
}

// List and ByIndex return objects sorted by namespace, then name, whatever
// the order of creation and of the store's map, call after call.
func TestListAndByIndexAreSorted(t *testing.T) {
	a, b := env.Namespace(t), env.Namespace(t)
	created := []string{"m", "z", "a", "q", "b", "y", "c"}
	owner := "o-" + a // this run's own (see TestByIndexInNamespace)
	createOwned(t, owner, created, b, a)
	sorted := slices.Sorted(slices.Values(created))
	for _, scoped := range []bool{false, true} {
		t.Run(fmt.Sprintf("scoped=%v", scoped), func(t *testing.T) {
			opts := cache.Options{}
			if scoped {
				opts.Namespaces = []string{a, b}
			}
			c := newCache(t, opts)
			cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := cms.AddIndex("owner", byOwnerName); err != nil {
				t.Fatal(err)
			}
			start(t, c)
			for range 5 {
				got, err := cms.List(a, nil)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(sorted, names(got)); diff != "" {
					t.Fatalf("List(%s) (-want +got):\n%s", a, diff)
				}
				all, err := cms.List("", nil)
				if err != nil {
					t.Fatal(err)
				}
				allKeys := keys(all)
				if !slices.IsSortedFunc(all, byKey) {
					t.Fatalf("List(every namespace) not sorted by namespace, then name: %v", allKeys)
				}
				owned, err := cms.ByIndex("owner", owner)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.IsSortedFunc(owned, byKey) || len(owned) != 2*len(created) {
					t.Fatalf("ByIndex(owner, %s) = %v, want %d objects sorted by namespace, then name", owner, keys(owned), 2*len(created))
				}
			}
		})
	}
}

func byKey(x, y *corev1.ConfigMap) int {
	if c := strings.Compare(x.Namespace, y.Namespace); c != 0 {
		return c
	}
	return strings.Compare(x.Name, y.Name)
}
