package cache_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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
