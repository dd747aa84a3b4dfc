package consistency_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/internal/consistency"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

var configMapGVK = corev1.SchemeGroupVersion.WithKind("ConfigMap")

// PerKey keeps what the cache has not caught up with, and forgets, once
// it has grown, the keys whose writes the cache has since seen.
func TestPerKeyKeepsAndSweeps(t *testing.T) {
	ns := env.Namespace(t)
	c, err := cache.New(env.Config(), cache.Options{Namespaces: []string{ns}, Mutations: cache.MutationOptions{OnMutation: testenv.ReportMutations(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a bound on failure, not a measurement
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	cl := env.Client().CoreV1().ConfigMaps(ns)
	cm, err := cl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "o"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, cm, false).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	writes := func(ahead int64) *consistency.Writes {
		rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		o := cm.DeepCopy()
		o.ResourceVersion = strconv.FormatInt(rv+ahead, 10)
		w := new(consistency.Writes)
		w.Add(cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, o, false))
		return w
	}

	var keys consistency.PerKey[int]
	keys.Keep(-1, new(consistency.Writes)) // nothing written
	keys.Keep(-2, writes(0))               // the version the cache holds
	if n := keys.Len(); n != 0 || !keys.Empty() {
		t.Fatalf("Len after keeping writes the cache has seen = %d (Empty %v), want 0", n, keys.Empty())
	}
	for k := range 70 {
		keys.Keep(k, writes(1)) // the next write of the object
	}
	if n := keys.Len(); n != 70 || keys.Empty() {
		t.Fatalf("Len = %d (Empty %v), want 70", n, keys.Empty())
	}
	if w := keys.Take(0); w == nil || !w.Pending() {
		t.Fatalf("Take(0) = %v, want the pending writes", w)
	}
	if w := keys.Take(0); w != nil {
		t.Fatalf("a second Take(0) = %v, want nil", w)
	}

	cm.Data = map[string]string{"v": "2"}
	if cm, err = cl.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, cm, false).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// Keys 1..69 are now caught up; growing to the next sweep drops them.
	for k := 100; keys.Len() >= 69; k++ {
		keys.Keep(k, writes(1_000_000))
		if k > 1000 {
			t.Fatalf("no sweep after %d keys kept: Len = %d", k-100, keys.Len())
		}
	}
	for k := range 2000 {
		keys.Take(k)
	}
	if n := keys.Len(); n != 0 || !keys.Empty() {
		t.Fatalf("Len after taking every key = %d (Empty %v), want 0", n, keys.Empty())
	}
}
