package cache_test

import (
	"testing"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
)

// Under memory pressure (the manager's ShedMemory) a LazyLister drops what
// it holds and holds nothing it fetches, so every Get fetches; once the
// pressure ends it holds again.
func TestLazyShedsUnderMemoryPressure(t *testing.T) {
	w := newLazyWorld(t, getCounter{})
	get := func() {
		t.Helper()
		if _, err := w.l.Get(t.Context(), w.ns, "csa"); err != nil {
			t.Fatal(err)
		}
	}
	held := func(want float64) {
		t.Helper()
		if got := w.metric(t, imetrics.CacheLazyObjects); got != want {
			t.Errorf("%s = %v, want %v", imetrics.CacheLazyObjects, got, want)
		}
	}
	get()
	held(1)
	shed := cache.Internal(w.c, cacheaccess.Key{}).ShedMemory
	shed(true)
	held(0)
	get()
	get()
	held(0)
	if n := w.gets.count(w.path("csa")); n != 3 {
		t.Errorf("%d GETs of csa, want 3: one before the pressure and one for each Get under it", n)
	}
	shed(false)
	get()
	get()
	held(1)
	if n := w.gets.count(w.path("csa")); n != 4 {
		t.Errorf("%d GETs of csa, want 4: after the pressure, one fetch held", n)
	}
}
