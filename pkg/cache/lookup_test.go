package cache_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
)

func TestLookupKind(t *testing.T) {
	c := newCache(t, cache.Options{UnregisteredReads: cache.UnregisteredReadOptions{OnRead: func(*cache.UnregisteredReadError) {}}})
	for _, tc := range []struct {
		form cacheaccess.Form
		says string
	}{
		{cacheaccess.Typed, "register it with cache.Register[*v1.ConfigMap] before Start"},
		{cacheaccess.Metadata, "register it with cache.Metadata"},
		{cacheaccess.Unstructured, "register it with cache.Unstructured"},
	} {
		_, err := cache.Internal(c, cacheaccess.Key{}).LookupKind(configMapGVK, tc.form)
		if !errors.Is(err, cache.ErrNotRegistered) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "/v1, Kind=ConfigMap") {
			t.Errorf("LookupKind(%s) of an unregistered kind = %v, want ErrNotRegistered naming /v1, Kind=ConfigMap and saying %q", tc.form, err, tc.says)
		}
	}

	if _, err := cache.Metadata(c, configMapGVK, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := cache.Internal(c, cacheaccess.Key{}).LookupKind(configMapGVK, cacheaccess.Metadata)
	if err != nil || l.GroupVersionKind() != configMapGVK {
		t.Errorf("LookupKind(metadata) after Metadata = %v, %v; want a lister of ConfigMaps", l, err)
	}
	_, err = cache.Internal(c, cacheaccess.Key{}).LookupKind(configMapGVK, cacheaccess.Typed)
	if !errors.Is(err, cache.ErrNotRegistered) || !strings.Contains(err.Error(), "registered in metadata form") {
		t.Errorf("LookupKind(typed) of a kind registered as metadata = %v, want ErrNotRegistered pointing at the metadata form", err)
	}

	if _, err := cache.Metadata(c, configMapGVK, cache.TypeOptions{Namespaces: []string{"elsewhere"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Internal(c, cacheaccess.Key{}).LookupKind(configMapGVK, cacheaccess.Metadata); err == nil || !strings.Contains(err.Error(), "2 registrations") {
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
			typed, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Namespaces: shape.namespaces})
			if err != nil {
				t.Fatal(err)
			}
			start(t, c)
			untyped, err := cache.Internal(c, cacheaccess.Key{}).LookupKind(configMapGVK, cacheaccess.Typed)
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

func objectKeys(objs []client.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetNamespace() + "/" + o.GetName()
	}
	return out
}

// A read of a kind nobody registered is logged once per kind and form,
// counted every time, and reported with Fail on, naming the kind and the
// registration to add, so that a test fails even if the reader swallows
// the error.
func TestUnregisteredReadsLoggedCountedReported(t *testing.T) {
	var logged []string
	logger := funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{})
	var reports []*cache.UnregisteredReadError
	reg := prometheus.NewRegistry()
	c := newCache(t, cache.Options{
		Registerer: reg, Logger: logger,
		UnregisteredReads: cache.UnregisteredReadOptions{Fail: true, OnRead: func(err *cache.UnregisteredReadError) { reports = append(reports, err) }},
	})
	for range 3 {
		if _, err := cache.Internal(c, cacheaccess.Key{}).LookupKind(configMapGVK, cacheaccess.Typed); !errors.Is(err, cache.ErrNotRegistered) {
			t.Fatalf("LookupKind of an unregistered kind = %v, want ErrNotRegistered", err)
		}
	}
	if _, err := cache.Internal(c, cacheaccess.Key{}).LookupKind(configMapGVK, cacheaccess.Metadata); !errors.Is(err, cache.ErrNotRegistered) {
		t.Fatalf("LookupKind of an unregistered kind = %v, want ErrNotRegistered", err)
	}
	if len(logged) != 2 || !strings.Contains(logged[0], `"gvk"="/v1, Kind=ConfigMap"`) || !strings.Contains(logged[0], "cache.Register[*v1.ConfigMap]") {
		t.Errorf("logged %q, want one line per form, naming the kind and the registration", logged)
	}
	want := `
# HELP opkit_cache_unregistered_reads_total Reads through the cached client of a kind nobody registered, by type and form.
# TYPE opkit_cache_unregistered_reads_total counter
opkit_cache_unregistered_reads_total{form="metadata",type="v1/ConfigMap"} 1
opkit_cache_unregistered_reads_total{form="typed",type="v1/ConfigMap"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), imetrics.CacheUnregisteredReads); err != nil {
		t.Error(err)
	}
	if len(reports) != 4 || reports[0].GVK != configMapGVK || reports[0].Form != "typed" ||
		!strings.Contains(reports[0].Error(), "cache.Register[*v1.ConfigMap]") || !strings.Contains(reports[0].Stack, "TestUnregisteredReadsLoggedCountedReported") {
		t.Errorf("reports %v, want 4, the first naming the typed ConfigMap, its registration and where it was read", reports)
	}
}
