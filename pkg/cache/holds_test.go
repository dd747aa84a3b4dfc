package cache_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
)

// goroutinesBack fails t unless the goroutines are back to those of
// ignore, idle HTTP/2 connections aside, within 30s: stopped informers
// return asynchronously, and a loaded machine may take a while.
func goroutinesBack(t *testing.T, ignore goleak.Option) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := goleak.Find(ignore, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("goroutines left behind: %v", err)
			return
		}
	}
}

// seriesOf returns how many series of the metric name carry the label
// value kind.
func seriesOf(t *testing.T, reg prometheus.Gatherer, name, kind string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == kind || strings.HasSuffix(l.GetValue(), "/"+kind) {
					n++
					break
				}
			}
		}
	}
	return n
}

// Two owners share one registration; the type is cached until the last
// releases it, then its watch ends, its goroutines return, Status no
// longer lists it, reads fail with ErrRemoved and its series are gone.
func TestLastReleaseStopsTheType(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	var open atomic.Int64
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return openWatches{rt, "/configmaps", &open} })
	reg := prometheus.NewPedanticRegistry()
	c, err := cache.New(cfg, cache.Options{Namespaces: []string{ns}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	ignore := goleak.IgnoreCurrent()

	a, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Owner: "b"})
	if err != nil {
		t.Fatal(err)
	}
	b2, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Owner: "b"})
	if err != nil {
		t.Fatal(err)
	}
	waitSynced(t, c)
	if n := open.Load(); n != 1 {
		t.Fatalf("%d ConfigMap watches open for three Listers of one registration, want 1", n)
	}
	if diff := cmp.Diff(map[string]int{"a": 1, "b": 2}, owners(t, c)); diff != "" {
		t.Errorf("Status().Owners (-want +got):\n%s", diff)
	}
	wantMetric := fmt.Sprintf(`
# HELP opkit_cache_holds Listers each named owner holds on a type (TypeOptions.Owner), by type and owner.
# TYPE opkit_cache_holds gauge
opkit_cache_holds{form="typed",group="",kind="ConfigMap",owner="a",scope=%[1]q,version="v1"} 1
opkit_cache_holds{form="typed",group="",kind="ConfigMap",owner="b",scope=%[1]q,version="v1"} 2
`, ns)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantMetric), imetrics.CacheHolds); err != nil {
		t.Error(err)
	}

	a.Release()
	a.Release() // idempotent: b's holds stay
	b.Release()
	if diff := cmp.Diff(map[string]int{"b": 1}, owners(t, c)); diff != "" {
		t.Errorf("Status().Owners after a and one of b's released (-want +got):\n%s", diff)
	}
	if _, err := b2.Get(ns, "plain"); err != nil {
		t.Errorf("Get through a Lister still held = %v", err)
	}
	if n := open.Load(); n != 1 {
		t.Errorf("%d ConfigMap watches open while b holds the type, want 1", n)
	}

	b2.Release()
	waitFor(t, 10*time.Second, func() bool { return open.Load() == 0 })
	if st := c.Status(); len(st) != 0 {
		t.Errorf("Status after the last release = %+v, want none", st)
	}
	if _, err := b2.Get(ns, "plain"); !errors.Is(err, cache.ErrRemoved) {
		t.Errorf("Get after the last release = %v, want ErrRemoved", err)
	}
	for _, name := range []string{imetrics.CacheRelists, imetrics.CacheWatchRestarts, imetrics.CacheSyncErrors, imetrics.CacheHolds, imetrics.CacheObjects} {
		if n := seriesOf(t, reg, name, "ConfigMap"); n != 0 {
			t.Errorf("%d series of %s left for ConfigMap after the last release", n, name)
		}
	}
	goroutinesBack(t, ignore)
}

// A registration without an owner holds the type for the cache's life:
// releasing every owner's Lister leaves it running.
func TestUnownedRegistrationPinsTheType(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	owned, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	owned.Release()
	pinned.Release() // no owner: nothing to release
	if _, err := pinned.Get(ns, "plain"); err != nil {
		t.Errorf("Get after the owner released a pinned type = %v, want the object", err)
	}
	if st := c.Status(); len(st) != 1 || !st[0].Synced {
		t.Errorf("Status = %+v, want ConfigMaps, synced", st)
	}
}

// Owners acquiring and releasing one type at once, with a registration
// made as the last hold goes, always end with a registration that works
// and owns its series: the old one's removal never deletes the new one's.
func TestReleaseAndAcquireRace(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	reg := prometheus.NewPedanticRegistry()
	c := newCache(t, cache.Options{Namespaces: []string{ns}, Registerer: reg})
	start(t, c)
	ignore := goleak.IgnoreCurrent()
	for round := range 30 {
		first, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Owner: "old"})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var next *cache.Lister[*corev1.ConfigMap]
		wg.Go(first.Release)
		wg.Go(func() {
			var err error
			if next, err = cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Owner: "new"}); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		if next == nil {
			t.FailNow()
		}
		waitSynced(t, c)
		if _, err := next.Get(ns, "plain"); err != nil {
			t.Fatalf("round %d: Get through the registration made as the last hold went = %v", round, err)
		}
		if n := seriesOf(t, reg, imetrics.CacheRelists, "ConfigMap"); n != 1 {
			t.Fatalf("round %d: %d opkit_cache_relists_total series for the live registration, want 1", round, n)
		}
		if diff := cmp.Diff(map[string]int{"new": 1}, owners(t, c)); diff != "" {
			t.Fatalf("round %d: Status().Owners (-want +got):\n%s", round, diff)
		}
		next.Release()
	}
	if st := c.Status(); len(st) != 0 {
		t.Errorf("Status after every release = %+v, want none", st)
	}
	goroutinesBack(t, ignore)
}

// waitSynced waits for every registered type of c to sync.
func waitSynced(t *testing.T, c *cache.Cache) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := c.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
}

// owners returns the Owners of the one type c caches, which it fails t
// unless it caches exactly one.
func owners(t *testing.T, c *cache.Cache) map[string]int {
	t.Helper()
	st := c.Status()
	if len(st) != 1 {
		t.Fatalf("Status = %+v, want one type", st)
	}
	return st[0].Owners
}
