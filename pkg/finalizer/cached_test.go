package finalizer_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/finalizer"
)

// The objects a reconciler holds come from a Lister and are shared: Ensure,
// Remove and Finalize leave them as they are. The mutation detector that
// testenv.Main turns on would fail the test binary otherwise; the
// comparison with a copy says which call did it.
func TestCachedObjectsUnmodified(t *testing.T) {
	ns := env.Namespace(t)
	c, _ := newClient(t)
	cm := newConfigMap(t, ns)
	informers, err := cache.New(env.Config(), cache.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := cache.Register[*corev1.ConfigMap](informers, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 100) // resourceVersions the cache took in
	record := func(obj any) {
		if o, ok := obj.(*corev1.ConfigMap); ok && o.Name == cm.Name {
			seen <- o.ResourceVersion
		}
	}
	if _, err := cms.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := informers.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// cached returns the Lister's object once the cache has taken in rv.
	cached := func(rv string) *corev1.ConfigMap {
		t.Helper()
		for {
			select {
			case <-ctx.Done():
				t.Fatalf("the cache did not take in resourceVersion %s", rv)
			case got := <-seen:
				if got != rv {
					continue
				}
			}
			obj, err := cms.Get(ns, cm.Name)
			if err != nil {
				t.Fatal(err)
			}
			return obj
		}
	}
	steps := []struct {
		name string
		call func(*corev1.ConfigMap) error
	}{
		{"Ensure", func(o *corev1.ConfigMap) error { _, err := finalizer.Ensure(ctx, c, o, ours); return err }},
		{"Remove", func(o *corev1.ConfigMap) error { _, err := finalizer.Remove(ctx, c, o, ours); return err }},
		{"Finalize", func(o *corev1.ConfigMap) error {
			_, err := finalizer.Finalize(ctx, c, o, ours, func(context.Context) error { return nil })
			return err
		}},
	}
	rv := cm.ResourceVersion
	for _, s := range steps {
		obj := cached(rv)
		before := obj.DeepCopy()
		if err := s.call(obj); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if d := cmp.Diff(before, obj); d != "" {
			t.Errorf("%s modified the cached object (-before +after):\n%s", s.name, d)
		}
		cur, err := env.Client().CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rv = cur.ResourceVersion
	}
}
