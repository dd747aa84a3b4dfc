package cache_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/sharding"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// shardSlots is the slot count of most sharded tests; partitionSlots the
// partition test's, fine enough that each of three caches holds a third
// of the objects, give or take a few, not a sixteenth.
const (
	shardSlots     = 16
	partitionSlots = 1024
)

// createShardConfigMaps creates n ConfigMaps in ns and returns them by name.
func createShardConfigMaps(t *testing.T, ns string, n int) map[string]*corev1.ConfigMap {
	t.Helper()
	return createShardConfigMapsIn(t, env, ns, n)
}

// createShardConfigMapsIn is createShardConfigMaps in control plane e.
func createShardConfigMapsIn(t *testing.T, e *testenv.Environment, ns string, n int) map[string]*corev1.ConfigMap {
	t.Helper()
	var mu sync.Mutex
	out := map[string]*corev1.ConfigMap{}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i), Namespace: ns}}
				got, err := e.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				out[got.Name] = got
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return out
}

// bySlot returns the names of objs whose slot under key is in slots, sorted.
func bySlot(count int, objs map[string]*corev1.ConfigMap, key sharding.Key, slots []int) []string {
	s, _ := sharding.NewSlots(count)
	var out []string
	for name, o := range objs {
		if slices.Contains(slots, s.SlotOf(key, o)) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func objNames[T cache.Object](objs []T) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetName()
	}
	return out
}

func slotRange(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// events counts the names a handler was handed adds and deletes of.
type events struct {
	mu            sync.Mutex
	added, delete map[string]int
}

func newEvents() *events { return &events{added: map[string]int{}, delete: map[string]int{}} }

func (e *events) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			e.mu.Lock()
			e.added[obj.(metav1.Object).GetName()]++
			e.mu.Unlock()
		},
		DeleteFunc: func(obj any) {
			e.mu.Lock()
			e.delete[obj.(metav1.Object).GetName()]++
			e.mu.Unlock()
		},
	}
}

func (e *events) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	clear(e.added)
	clear(e.delete)
}

func (e *events) names(m func(*events) map[string]int) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m(e) {
			if !yield(k) {
				return
			}
		}
	})
}

type shardedCache struct {
	c      *cache.Cache
	lister *cache.Lister[*corev1.ConfigMap]
	ev     *events
	slots  []int
	count  int
}

func newShardedCache(t *testing.T, ns string, filter cache.ServerFilter, count int, slots []int) *shardedCache {
	t.Helper()
	return newShardedCacheWith(t, ns, cache.Options{}, filter, count, slots)
}

// newShardedCacheWith is newShardedCache with the other options of opts.
func newShardedCacheWith(t *testing.T, ns string, opts cache.Options, filter cache.ServerFilter, count int, slots []int) *shardedCache {
	t.Helper()
	s, _ := sharding.NewSlots(count)
	opts.Sharding = cache.ShardingOptions{Slots: s, ServerFilter: filter}
	c := newCache(t, opts)
	l, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Namespaces: []string{ns}, Sharded: true})
	if err != nil {
		t.Fatal(err)
	}
	ev := newEvents()
	h, err := l.AddEventHandler(ev.handler())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetSlots(t.Context(), slots); err != nil {
		t.Fatal(err)
	}
	start(t, c)
	// The informers' sync does not wait for their handlers; SetSlots after
	// Start does.
	if !toolscache.WaitForCacheSync(t.Context().Done(), h.HasSynced) {
		t.Fatal("handler not synced")
	}
	return &shardedCache{c: c, lister: l, ev: ev, slots: slots, count: count}
}

// holdsExactly fails t unless sc's Lister lists exactly want.
func (sc *shardedCache) holdsExactly(t *testing.T, ns string, want []string) {
	t.Helper()
	got, err := sc.lister.List(ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(objNames(got), want) {
		t.Errorf("cache of %d slots holds %d objects, want %d (the objects of its slots by SlotOf)", len(sc.slots), len(got), len(want))
	}
}

// TestShardedCachesPartition: three caches with disjoint slot sets that
// cover every slot hold exactly their slots' objects, each at most a third
// plus 10%; slots move from one to another without a read of a slot held
// throughout missing, and handlers see the gained slots' adds and the lost
// slots' deletes.
func TestShardedCachesPartition(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter cache.ServerFilter
		n      int
	}{
		{"server selectors detected", cache.ServerFilterDetect, 3000},
		{"filtered in the cache", cache.ServerFilterOff, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			objs := createShardConfigMaps(t, ns, tc.n)
			sets := [][]int{slotRange(0, 340), slotRange(341, 682), slotRange(683, 1023)}
			caches := make([]*shardedCache, len(sets))
			for i, set := range sets {
				caches[i] = newShardedCache(t, ns, tc.filter, partitionSlots, set)
			}
			for _, sc := range caches {
				want := bySlot(partitionSlots, objs, sharding.ByUID, sc.slots)
				sc.holdsExactly(t, ns, want)
				// A third plus 10% of a third: 3.8 standard deviations
				// above a cache's expected share of random UIDs.
				if limit := tc.n * 11 / 30; tc.n >= 3000 && len(want) > limit {
					t.Errorf("slots %d..%d hold %d of %d objects, more than a third plus 10%% (%d)", sc.slots[0], sc.slots[len(sc.slots)-1], len(want), tc.n, limit)
				}
				if got := sc.ev.names(func(e *events) map[string]int { return e.added }); !slices.Equal(got, want) {
					t.Errorf("handler of %d slots was handed %d adds, want %d", len(sc.slots), len(got), len(want))
				}
			}
			for _, sc := range caches {
				sc.ev.reset()
			}
			moveSlots(t, ns, objs, caches[0], caches[1])
		})
	}
}

// moveSlots moves slots 341..400 from b to a: a gains them first, then b
// loses them, while readers check that neither misses an object of a slot
// it holds throughout.
func moveSlots(t *testing.T, ns string, objs map[string]*corev1.ConfigMap, a, b *shardedCache) {
	t.Helper()
	moved := slotRange(341, 400)
	aKeeps, bKeeps := bySlot(a.count, objs, sharding.ByUID, a.slots), bySlot(b.count, objs, sharding.ByUID, slotRange(401, 682))
	var misses atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, r := range []struct {
		sc   *shardedCache
		want []string
	}{{a, aKeeps}, {b, bKeeps}} {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, name := range r.want {
					if _, err := r.sc.lister.Get(ns, name); err != nil {
						misses.Add(1)
					}
				}
			}
		})
	}
	a.slots = append(slices.Clone(a.slots), moved...)
	if err := a.c.SetSlots(t.Context(), a.slots); err != nil {
		t.Fatal(err)
	}
	b.slots = slotRange(401, 682)
	if err := b.c.SetSlots(t.Context(), b.slots); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if n := misses.Load(); n > 0 {
		t.Errorf("%d reads missed an object of a slot held throughout", n)
	}
	movedNames := bySlot(a.count, objs, sharding.ByUID, moved)
	a.holdsExactly(t, ns, bySlot(a.count, objs, sharding.ByUID, a.slots))
	b.holdsExactly(t, ns, bySlot(b.count, objs, sharding.ByUID, b.slots))
	if got := a.ev.names(func(e *events) map[string]int { return e.added }); !slices.Equal(got, movedNames) {
		t.Errorf("gaining slots %d..%d handed %d adds, want the %d objects of those slots", moved[0], moved[len(moved)-1], len(got), len(movedNames))
	}
	if got := b.ev.names(func(e *events) map[string]int { return e.delete }); !slices.Equal(got, movedNames) {
		t.Errorf("losing slots %d..%d handed %d deletes, want the %d objects of those slots", moved[0], moved[len(moved)-1], len(got), len(movedNames))
	}
	if got := b.ev.names(func(e *events) map[string]int { return e.added }); len(got) != 0 {
		t.Errorf("losing slots handed %d adds of objects held throughout, want none", len(got))
	}
}
