package cache_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/opkit-dev/opkit/pkg/cache"
)

func TestLookupKind(t *testing.T) {
	c := newCache(t, cache.Options{})
	for _, tc := range []struct {
		form cache.Form
		says string
	}{
		{cache.FormTyped, "register it with cache.For[*v1.ConfigMap] before Start"},
		{cache.FormMetadata, "register it with cache.Metadata"},
		{cache.FormUnstructured, "register it with cache.Unstructured"},
	} {
		_, err := cache.LookupKind(c, configMapGVK, tc.form)
		if !errors.Is(err, cache.ErrNotRegistered) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "/v1, Kind=ConfigMap") {
			t.Errorf("LookupKind(%s) of an unregistered kind = %v, want ErrNotRegistered naming /v1, Kind=ConfigMap and saying %q", tc.form, err, tc.says)
		}
	}

	if _, err := cache.Metadata(c, configMapGVK, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := cache.LookupKind(c, configMapGVK, cache.FormMetadata)
	if err != nil || l.GroupVersionKind() != configMapGVK {
		t.Errorf("LookupKind(metadata) after Metadata = %v, %v; want a lister of ConfigMaps", l, err)
	}
	_, err = cache.LookupKind(c, configMapGVK, cache.FormTyped)
	if !errors.Is(err, cache.ErrNotRegistered) || !strings.Contains(err.Error(), "registered in metadata form") {
		t.Errorf("LookupKind(typed) of a kind registered as metadata = %v, want ErrNotRegistered pointing at the metadata form", err)
	}

	if _, err := cache.Metadata(c, configMapGVK, cache.TypeOptions{Namespaces: []string{"elsewhere"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.LookupKind(c, configMapGVK, cache.FormMetadata); err == nil || !strings.Contains(err.Error(), "2 registrations") {
		t.Errorf("LookupKind of a kind registered twice = %v, want an error saying so", err)
	}
}

// ObjectLister.List answers as Lister.List does, in each shape of cache:
// one informer for every namespace, and one per namespace.
func TestObjectListerListsAsListerDoes(t *testing.T) {
	ns1, ns2 := env.Namespace(t), env.Namespace(t)
	createConfigMaps(t, ns1)
	createConfigMaps(t, ns2)
	appA := labels.SelectorFromSet(labels.Set{"app": "a"})
	for _, shape := range []struct {
		name       string
		namespaces []string
	}{{"every namespace", nil}, {"per namespace", []string{ns1, ns2}}} {
		t.Run(shape.name, func(t *testing.T) {
			c := newCache(t, cache.Options{})
			typed, err := cache.For[*corev1.ConfigMap](c, cache.TypeOptions{Namespaces: shape.namespaces})
			if err != nil {
				t.Fatal(err)
			}
			start(t, c)
			untyped, err := cache.LookupKind(c, configMapGVK, cache.FormTyped)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []struct {
				namespace string
				selector  labels.Selector
			}{{"", nil}, {ns1, nil}, {ns2, appA}, {"", appA}} {
				want, err := typed.List(q.namespace, q.selector)
				if err != nil {
					t.Fatal(err)
				}
				got, err := untyped.List(q.namespace, q.selector)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(keys(want), objectKeys(got)); diff != "" {
					t.Errorf("List(%q, %v) (-Lister +ObjectLister):\n%s", q.namespace, q.selector, diff)
				}
				if len(got) == 0 {
					t.Errorf("List(%q, %v) found nothing; the test needs objects", q.namespace, q.selector)
				}
			}
		})
	}
}

func objectKeys(objs []cache.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetNamespace() + "/" + o.GetName()
	}
	return out
}
