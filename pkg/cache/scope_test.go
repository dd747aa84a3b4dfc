package cache_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/pkg/cache"
)

// A type cached in several namespaces (one informer each) answers Get, List
// and ByIndex across them, and nothing from a namespace it does not cache.
func TestSeveralNamespaces(t *testing.T) {
	a, b, other := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	for _, ns := range []string{a, b, other} {
		createConfigMaps(t, ns)
	}
	c := newCache(t, cache.Options{Namespaces: []string{b, a}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cms.AddIndex("app", func(cm *corev1.ConfigMap) []string {
		if app := cm.Labels["app"]; app != "" {
			return []string{app}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	start(t, c)

	if infs, err := cache.Internal(c, cacheaccess.Key{}).Informers(cms); err != nil || len(infs) != 2 {
		t.Errorf("Informers = %d informers, %v for two namespaces, want 2, nil", len(infs), err)
	}
	want := []string{a, b}
	slices.Sort(want)
	if diff := cmp.Diff(want, c.Status()[0].Namespaces); diff != "" {
		t.Errorf("Status().Namespaces (-want +got):\n%s", diff)
	}
	for _, ns := range []string{a, b} {
		if _, err := cms.Get(ns, "csa"); err != nil {
			t.Errorf("Get(%s, csa) = %v", ns, err)
		}
	}
	if _, err := cms.Get(other, "csa"); err == nil || !strings.Contains(err.Error(), "not cached") {
		t.Errorf("Get in an uncached namespace = %v, want an error saying it is not cached", err)
	}

	all, err := cms.List("", nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, cm := range all {
		seen[cm.Namespace]++
	}
	if seen[a] < 3 || seen[b] < 3 || seen[other] != 0 || len(seen) != 2 {
		t.Errorf("List of every cached namespace found objects per namespace %v, want 3 (or more) in %s and %s only", seen, a, b)
	}
	onlyA, err := cms.List("", labels.SelectorFromSet(labels.Set{"app": "a"}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"csa", "csa"}, names(onlyA)); diff != "" {
		t.Errorf("List(every namespace, app=a) (-want +got):\n%s", diff)
	}
	byApp, err := cms.ByIndex("app", "b")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ssa", "ssa"}, names(byApp)); diff != "" {
		t.Errorf("ByIndex(app, b) over two namespaces (-want +got):\n%s", diff)
	}
}

// A field selector limits what the API server sends, like a label selector.
func TestFieldSelectorScope(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "plain")})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	all, err := cms.List(ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"plain"}, names(all)); diff != "" {
		t.Errorf("cached (-want +got):\n%s", diff)
	}
	if s := c.Status()[0].Selector; !strings.Contains(s, "metadata.name=plain") {
		t.Errorf("Status().Selector = %q, want the field selector", s)
	}
}

// A Get of a cluster-scoped kind with a namespace (a Node read with its
// Pod's namespace) finds the object, as controller-runtime's cached and
// uncached clients do, in every form; a List with a namespace is refused
// with an error that says to list with none, since controller-runtime's
// two clients answer it differently (see Lister.Get and Lister.List).
func TestClusterScopedReadWithANamespace(t *testing.T) {
	ns := env.Namespace(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-node"}}
	cl := writeClient(t)
	if err := cl.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Delete(context.Background(), node) })
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	nodes, err := cache.Register[*corev1.Node](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lazyCache := newCache(t, cache.Options{})
	lazy, err := cache.Lazy[*corev1.Node](lazyCache, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	start(t, lazyCache)

	want, err := nodes.Get("", node.Name)
	if err != nil {
		t.Fatal(err)
	}
	got, err := nodes.Get(ns, node.Name)
	if err != nil || got != want {
		t.Errorf("Get(%q, %q) = %p, %v; want the Node Get(\"\", %q) returns (%p)", ns, node.Name, got, err, node.Name, want)
	}
	if _, err := nodes.Get(ns, "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("Get(%q, missing) = %v, want NotFound", ns, err)
	}
	if m, err := lazy.Metadata().Get(ns, node.Name); err != nil || m.Name != node.Name {
		t.Errorf("metadata Get(%q, %q) = %v, %v; want the Node", ns, node.Name, m, err)
	}
	full, err := lazy.Get(t.Context(), ns, node.Name)
	if err != nil || full.Name != node.Name {
		t.Fatalf("lazy Get(%q, %q) = %v, %v; want the Node", ns, node.Name, full, err)
	}
	if again, err := lazy.Get(t.Context(), "", node.Name); err != nil || again != full {
		t.Errorf("lazy Get(\"\", %q) = %p, %v; want the object Get(%q, %q) fetched (%p): one held copy per Node", node.Name, again, err, ns, node.Name, full)
	}

	_, err = nodes.List(ns, nil)
	const wantErr = `list it with an empty namespace`
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Errorf("List(%q) = %v, want an error saying to %s", ns, err, wantErr)
	}
}
