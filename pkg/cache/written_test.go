package cache_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/pkg/cache"
)

// ahead returns a copy of obj at a resourceVersion n ahead of its own: a
// write no informer has seen yet.
func ahead(t *testing.T, obj *corev1.ConfigMap, n int64) *corev1.ConfigMap {
	t.Helper()
	rv, err := strconv.ParseInt(obj.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	c := obj.DeepCopy()
	c.ResourceVersion = strconv.FormatInt(rv+n, 10)
	return c
}

func bound(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a bound on failure, not a measurement
	t.Cleanup(cancel)
	return ctx
}

// Written waits in every cache shape for the informer that holds the
// object: one for every namespace, the one of the object's namespace among
// several, and every registration of the kind, in any form.
func TestWrittenWaitsInEveryCacheShape(t *testing.T) {
	ns1, ns2 := env.Namespace(t), env.Namespace(t)
	shapes := map[string]func(t *testing.T) *cache.Cache{
		"every namespace": func(t *testing.T) *cache.Cache {
			c := newCache(t, cache.Options{})
			registered(t)(cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{}))
			return c
		},
		"several namespaces": func(t *testing.T) *cache.Cache {
			c := newCache(t, cache.Options{Namespaces: []string{ns1, ns2}})
			registered(t)(cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{}))
			return c
		},
		"typed and metadata": func(t *testing.T) *cache.Cache {
			c := newCache(t, cache.Options{})
			registered(t)(cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Namespaces: []string{ns2}}))
			registered(t)(cache.Metadata(c, configMapGVK, cache.TypeOptions{}))
			return c
		},
	}
	cl := writeClient(t)
	for name, newShape := range shapes {
		t.Run(name, func(t *testing.T) {
			c := newShape(t)
			start(t, c)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, GenerateName: "w-"}}
			if err := cl.Create(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			if err := cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, cm, false).Wait(bound(t)); err != nil {
				t.Fatalf("Wait for a create: %v", err)
			}
			if w := cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, ahead(t, cm, 1_000_000), false); w.CaughtUp() {
				t.Errorf("a write a million versions ahead has caught up")
			}
			lister, err := cache.Lookup[*corev1.ConfigMap](c)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := lister.Get(ns2, cm.Name); err != nil || got.ResourceVersion != cm.ResourceVersion {
				t.Errorf("Get after Wait = %v, %v; want resourceVersion %s", got, err, cm.ResourceVersion)
			}

			if err := cl.Delete(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			if err := cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, cm, true).Wait(bound(t)); err != nil {
				t.Fatalf("Wait for a delete: %v", err)
			}
			if _, err := lister.Get(ns2, cm.Name); !apierrors.IsNotFound(err) {
				t.Errorf("Get after Wait for the delete = %v, want not found", err)
			}
		})
	}
}

// In a cache of several namespaces, each namespace's informer has its own
// resourceVersion: writes seen in one namespace say nothing of another
// (controller-runtime's experimental read-your-writes gets this wrong).
func TestWrittenIsPerNamespaceInformer(t *testing.T) {
	// ns2's informer may legitimately move past first without an event
	// there: a watch restart relists at the current version, and a bookmark
	// carries it. Then a write ahead of first in ns2 has caught up, and
	// the attempt proves nothing either way: try again in new namespaces.
	for attempt := 1; ; attempt++ {
		if perNamespaceInformer(t) {
			return
		}
		if attempt == 3 {
			t.Fatal("in 3 attempts, ns2's informer always moved past its last event (a relist or bookmark) before the checks were done")
		}
		t.Logf("attempt %d: ns2's informer moved past its last event meanwhile; trying again", attempt)
	}
}

// perNamespaceInformer checks that Written is per namespace informer, and
// reports false when ns2's informer moved past its last event meanwhile,
// which makes the check inconclusive.
func perNamespaceInformer(t *testing.T) (conclusive bool) {
	t.Helper()
	ns1, ns2 := env.Namespace(t), env.Namespace(t)
	c := newCache(t, cache.Options{Namespaces: []string{ns1, ns2}})
	registered(t)(cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{}))
	start(t, c)
	cl := writeClient(t)

	first := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, Name: "first"}}
	if err := cl.Create(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	if err := cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, first, false).Wait(bound(t)); err != nil {
		t.Fatal(err)
	}
	// still reports that ns2's informer has seen no version past first's.
	still := func() bool {
		return !cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, ahead(t, first, 1), false).CaughtUp()
	}
	// A write in ns2 five versions ahead of first: none will happen there.
	inNS2 := ahead(t, first, 5)
	inNS1 := inNS2.DeepCopy()
	inNS1.Namespace = ns1
	var last *corev1.ConfigMap
	for i := range 10 {
		last = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns1, Name: fmt.Sprint("n", i)}}
		if err := cl.Create(t.Context(), last); err != nil {
			t.Fatal(err)
		}
	}
	if err := cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, last, false).Wait(bound(t)); err != nil {
		t.Fatal(err)
	}
	if !cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, inNS1, false).CaughtUp() {
		t.Errorf("ns1's informer has seen %s, past %s, but a write at %s there has not caught up", last.ResourceVersion, inNS1.ResourceVersion, inNS1.ResourceVersion)
	}
	if !still() {
		return false
	}
	caughtUp := cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, inNS2, false).CaughtUp()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	waitErr := cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, inNS2, false).Wait(ctx)
	if !still() {
		return false
	}
	if caughtUp {
		t.Errorf("a write in ns2 at %s has caught up, though ns2's informer saw nothing past %s", inNS2.ResourceVersion, first.ResourceVersion)
	}
	if !errors.Is(waitErr, context.DeadlineExceeded) {
		t.Errorf("Wait for a write ns2's informer never sees = %v, want context.DeadlineExceeded", waitErr)
	}
	return true
}

// A write the cache would never hold is not waited for: Written has caught
// up at once, even for a version far ahead.
func TestWrittenSkipsWhatTheCacheWouldNotHold(t *testing.T) {
	ns1, ns2 := env.Namespace(t), env.Namespace(t)
	c := newCache(t, cache.Options{})
	registered(t)(cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{
		Namespaces:    []string{ns1},
		LabelSelector: labels.SelectorFromSet(labels.Set{"app": "a"}),
	}))
	registered(t)(cache.Metadata(c, configMapGVK, cache.TypeOptions{
		Namespaces:    []string{ns1},
		FieldSelector: fields.OneTermEqualSelector("metadata.name", "named"),
	}))
	registered(t)(cache.Register[*corev1.Secret](c, cache.TypeOptions{
		Namespaces:    []string{ns1},
		FieldSelector: fields.OneTermEqualSelector("type", "kubernetes.io/tls"),
	}))
	start(t, c)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns1, Name: "x", ResourceVersion: "1"}}
	far := ahead(t, cm, 1_000_000_000)
	for name, tc := range map[string]struct {
		mutate func(*corev1.ConfigMap)
		held   bool
	}{
		"labels match":                       {mutate: func(o *corev1.ConfigMap) { o.Labels = map[string]string{"app": "a"} }, held: true},
		"field selector on the name matches": {mutate: func(o *corev1.ConfigMap) { o.Name = "named" }, held: true},
		"labels and name match neither":      {mutate: func(o *corev1.ConfigMap) { o.Labels = map[string]string{"app": "b"} }},
		"namespace not cached":               {mutate: func(o *corev1.ConfigMap) { o.Namespace, o.Labels = ns2, map[string]string{"app": "a"} }},
	} {
		o := far.DeepCopy()
		tc.mutate(o)
		if got := cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, o, false).CaughtUp(); got == tc.held {
			t.Errorf("%s: CaughtUp = %v, want %v", name, got, !tc.held)
		}
	}
	secret := &metav1.ObjectMeta{Namespace: ns1, Name: "s", ResourceVersion: far.ResourceVersion}
	if !cache.Internal(c, cacheaccess.Key{}).Written(corev1.SchemeGroupVersion.WithKind("Secret"), secret, false).CaughtUp() {
		t.Error("a Secret under a field selector the cache cannot evaluate is waited for")
	}
	if !cache.Internal(c, cacheaccess.Key{}).Written(corev1.SchemeGroupVersion.WithKind("Pod"), secret, false).CaughtUp() {
		t.Error("a kind the cache does not hold is waited for")
	}
}

// registered fails the test if a registration failed.
func registered(t *testing.T) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}
