package cache_test

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// After its slots move, a sharded cache holds no object of the view it
// swapped out: the objects of the slots it kept are held once, as the new
// view's informers listed them, and those of the slots it lost not at all.
// (Each replica of the scale-out benchmark held twice its share of the
// objects once balancing had moved its slots: the new view's handlers
// kept the old view, to skip the adds it had handed on already.)
func TestSetSlotsReleasesTheOldView(t *testing.T) {
	// The mutation detector keeps every object that entered the cache.
	t.Setenv("OPKIT_CACHE_MUTATION_DETECTOR", "false")
	for name, filter := range map[string]cache.ServerFilter{"server filter detected": cache.ServerFilterDetect, "filtered in the cache": cache.ServerFilterOff} {
		ns := env.Namespace(t)
		createShardConfigMaps(t, ns, 200)
		sc := newShardedCacheWith(t, ns, cache.Options{Registerer: prometheus.NewRegistry()}, filter, 16, slotRange(0, 15))
		for _, set := range [][]int{slotRange(0, 7), slotRange(4, 15)} {
			held := weakly(t, sc, ns)
			if err := sc.c.SetSlots(t.Context(), set); err != nil {
				t.Fatal(err)
			}
			if n := stillHeld(held); n > 0 {
				t.Errorf("%s: %d of the %d objects of the view before slots %v are still held 10s after the move", name, n, len(held), set)
			}
		}
	}
}

// weakly returns weak pointers to every object sc's Lister lists in ns.
func weakly(t *testing.T, sc *shardedCache, ns string) []weak.Pointer[corev1.ConfigMap] {
	t.Helper()
	listed, err := sc.lister.List(ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]weak.Pointer[corev1.ConfigMap], len(listed))
	for i, cm := range listed {
		out[i] = weak.Make(cm)
	}
	return out
}

// stillHeld collects garbage until none of ps points anywhere, for up to
// 10s (the old informers stop after the swap), and returns how many still
// do.
func stillHeld(ps []weak.Pointer[corev1.ConfigMap]) int {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		runtime.GC()
		n := 0
		for _, p := range ps {
			if p.Value() != nil {
				n++
			}
		}
		if n == 0 || time.Now().After(deadline) {
			return n
		}
	}
}
