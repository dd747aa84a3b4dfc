package cache_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// Every form strips managed fields and the last-applied annotation of a
// kubectl-applied object by default, and keeps its other annotations.
func TestStrippedInEveryForm(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	typedL, metaL, unsL := allForms(t, c)
	start(t, c)
	get := map[string]func() (metav1.Object, error){
		"typed":        func() (metav1.Object, error) { return typedL.Get(ns, "csa") },
		"metadata":     func() (metav1.Object, error) { return metaL.Get(ns, "csa") },
		"unstructured": func() (metav1.Object, error) { return unsL.Get(ns, "csa") },
	}
	for form, get := range get {
		t.Run(form, func(t *testing.T) {
			got, err := get()
			if err != nil {
				t.Fatal(err)
			}
			if mf := got.GetManagedFields(); mf != nil {
				t.Errorf("managedFields cached: %v", mf)
			}
			if diff := cmp.Diff(map[string]string{"team": "blue"}, got.GetAnnotations()); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}

// allForms registers ConfigMaps with c in each form: typed, metadata-only
// and unstructured.
func allForms(t *testing.T, c *cache.Cache) (*cache.Lister[*corev1.ConfigMap], *cache.Lister[*metav1.PartialObjectMetadata], *cache.Lister[*unstructured.Unstructured]) {
	t.Helper()
	typed, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	meta, err := cache.Metadata(c, configMapGVK, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uns, err := cache.Unstructured(c, configMapGVK, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return typed, meta, uns
}
