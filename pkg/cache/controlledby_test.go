package cache_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/pkg/cache"
)

// ref is an owner reference to o, of kind gvk; a controller reference when
// controller is true.
func ref(gvk schema.GroupVersionKind, o metav1.Object, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Name: o.GetName(), UID: o.GetUID(), Controller: ptr.To(controller),
	}
}

// create creates a ConfigMap ns/name with refs and returns it as created.
func create(t *testing.T, cl client.Client, ns, name string, refs ...metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: refs}}
	if err := cl.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

// Same-named owners in two namespaces each get their own children, never
// the other's, whether one informer caches every namespace or one caches
// each; a child that names an owner without controller: true, or names an
// owner in another namespace, is nobody's child here.
func TestControlledBy(t *testing.T) {
	a, b := env.Namespace(t), env.Namespace(t)
	cl := writeClient(t)
	owners := map[string]*corev1.ConfigMap{}
	for _, ns := range []string{a, b} {
		owner := create(t, cl, ns, "web")
		owners[ns] = owner
		create(t, cl, ns, "web-1", ref(configMapGVK, owner, true))
		create(t, cl, ns, "web-0", ref(configMapGVK, owner, true))
		create(t, cl, ns, "not-controlled", ref(configMapGVK, owner, false))
	}
	// The API server accepts a reference to an owner in another namespace;
	// Kubernetes looks for that owner in the child's own namespace.
	create(t, cl, b, "elsewhere", ref(configMapGVK, owners[a], true))

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
			start(t, c)
			for _, ns := range []string{a, b} {
				got, err := cms.ControlledBy(owners[ns])
				if err != nil {
					t.Fatal(err)
				}
				want := []string{ns + "/web-0", ns + "/web-1"}
				if diff := cmp.Diff(want, keys(got)); diff != "" {
					t.Errorf("ControlledBy(%s/web) (-want +got):\n%s", ns, diff)
				}
			}
		})
	}
}

// A cluster-scoped owner's children are found in every namespace.
func TestControlledByClusterScopedOwner(t *testing.T) {
	a, b := env.Namespace(t), env.Namespace(t)
	if b < a {
		a, b = b, a
	}
	cl := writeClient(t)
	owner := &corev1.Namespace{}
	if err := cl.Get(t.Context(), client.ObjectKey{Name: a}, owner); err != nil {
		t.Fatal(err)
	}
	nsGVK := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	create(t, cl, a, "child", ref(nsGVK, owner, true))
	create(t, cl, b, "child", ref(nsGVK, owner, true))
	create(t, cl, b, "other")

	c := newCache(t, cache.Options{})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	got, err := cms.ControlledBy(owner)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{a + "/child", b + "/child"}, keys(got)); diff != "" {
		t.Errorf("ControlledBy(namespace %s) (-want +got):\n%s", a, diff)
	}
}

// A child whose controller reference changes leaves its old owner's
// children and joins its new owner's.
func TestControlledByFollowsAChangeOfController(t *testing.T) {
	ns := env.Namespace(t)
	cl := writeClient(t)
	first, second := create(t, cl, ns, "first"), create(t, cl, ns, "second")
	child := create(t, cl, ns, "child", ref(configMapGVK, first, true))

	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cache.Internal(c, cacheaccess.Key{}).IndexControlledBy(cms); err != nil {
		t.Fatal(err)
	}
	start(t, c)
	children := func(owner metav1.Object) []string {
		got, err := cms.ControlledBy(owner)
		if err != nil {
			t.Fatal(err)
		}
		return names(got)
	}
	if diff := cmp.Diff([]string{"child"}, children(first)); diff != "" {
		t.Fatalf("children of first before the change (-want +got):\n%s", diff)
	}

	child.OwnerReferences = []metav1.OwnerReference{ref(configMapGVK, first, false), ref(configMapGVK, second, true)}
	if err := cl.Update(t.Context(), child); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool { return len(children(second)) == 1 })
	if got := children(first); len(got) != 0 {
		t.Errorf("children of first after its child moved to second = %v, want none", got)
	}
}

// The controlled-by index (manager.Owns adds it through cacheaccess) may
// be added by every Lister of a registration, before and after Start;
// added for the first time after Start, by the first ControlledBy or
// otherwise, it covers what the informers hold already.
func TestIndexControlledByIsIdempotent(t *testing.T) {
	ns := env.Namespace(t)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	in := cache.Internal(c, cacheaccess.Key{})
	var listers []*cache.Lister[*corev1.ConfigMap]
	for range 2 {
		l, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := in.IndexControlledBy(l); err != nil {
			t.Fatalf("IndexControlledBy of a registration that has the index: %v", err)
		}
		listers = append(listers, l)
	}
	secrets, err := cache.Register[*corev1.Secret](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	if err := in.IndexControlledBy(listers[0]); err != nil {
		t.Errorf("IndexControlledBy after Start of a type that has the index = %v, want nil", err)
	}
	if err := in.IndexControlledBy(secrets); err != nil {
		t.Errorf("IndexControlledBy after Start of a type without the index = %v, want nil", err)
	}
	if _, err := secrets.ControlledBy(create(t, writeClient(t), ns, "owner")); err != nil {
		t.Errorf("ControlledBy with the index added after Start = %v", err)
	}
	if err := listers[1].AddIndex("opkit.dev/controlled-by", byOwnerName); err == nil {
		t.Errorf("AddIndex(%q) succeeded: the name is the cache's", "opkit.dev/controlled-by")
	}
	if err := in.IndexControlledBy(&corev1.ConfigMap{}); err == nil {
		t.Errorf("IndexControlledBy of a %T succeeded, want an error", &corev1.ConfigMap{})
	}
}

// ControlledBy of a type without the index adds it and reads it, over what
// the type holds already; an owner without a UID is an error that says so.
func TestControlledByErrors(t *testing.T) {
	ns := env.Namespace(t)
	cl := writeClient(t)
	owner := create(t, cl, ns, "owner")
	create(t, cl, ns, "child", ref(configMapGVK, owner, true))
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	got, err := cms.ControlledBy(owner)
	if err != nil {
		t.Fatalf("ControlledBy without the index = %v, want it added and read", err)
	}
	if diff := cmp.Diff([]string{"child"}, names(got)); diff != "" {
		t.Errorf("ControlledBy without the index (-want +got):\n%s", diff)
	}
	fresh := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: ns}}
	if _, err := cms.ControlledBy(fresh); err == nil || !strings.Contains(err.Error(), "no UID") {
		t.Errorf("ControlledBy of an owner without a UID = %v, want an error saying so", err)
	}
}
