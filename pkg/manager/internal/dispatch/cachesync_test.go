package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// heldCache is the real split cache, with a hand on its SetSlots: each
// call waits for the test to let it through (proceed), and fails when the
// test says so before it reaches the cache.
type heldCache struct {
	c       *cache.Cache
	calls   chan []int // each call's slots, as it begins
	proceed chan error // nil: call the cache; an error: fail with it
}

func (h *heldCache) SetSlots(ctx context.Context, slots []int) error {
	select {
	case h.calls <- slots:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-h.proceed:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.c.SetSlots(ctx, slots)
}

// cacheFixture is a Dispatcher over a split cache of one namespace's
// ConfigMaps, sharded ByNamespace, so that every key is of one slot, and a
// gate over them; the member holds the slots in held.
type cacheFixture struct {
	d      *Dispatcher
	gate   *Gate[*corev1.ConfigMap]
	lister *cache.Lister[*corev1.ConfigMap]
	q      *queue.Queue[reconcile.Request]
	reg    *prometheus.Registry
	cache  *heldCache
	clock  *clocktesting.FakeClock
	slot   int
	key    reconcile.Request
	held   sync.Map // slot → true
}

func newCacheFixture(t *testing.T) *cacheFixture {
	t.Helper()
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}
	if _, err := env.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slots, _ := sharding.NewSlots(gateSlots)
	c, err := cache.New(env.Config(), cache.Options{Namespaces: []string{ns},
		Sharding: cache.ShardingOptions{Slots: slots, ServerFilter: cache.ServerFilterOff}})
	if err != nil {
		t.Fatal(err)
	}
	f := &cacheFixture{
		reg: prometheus.NewRegistry(), q: queue.New(queue.Options[reconcile.Request]{}),
		cache: &heldCache{c: c, calls: make(chan []int), proceed: make(chan error)},
		clock: clocktesting.NewFakeClock(time.Now()), slot: slots.OfValue(ns),
		key: reconcile.Request{Namespace: ns, Name: "cm"},
	}
	t.Cleanup(f.q.ShutDown)
	if f.lister, err = cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Sharded: true, ShardKey: sharding.ByNamespace}); err != nil {
		t.Fatal(err)
	}
	member := MemberFunc(func(s int) bool { _, ok := f.held.Load(s); return ok })
	if f.d, err = New(member, Options{Cache: f.cache, Clock: f.clock, Registerer: f.reg}); err != nil {
		t.Fatal(err)
	}
	if f.gate, err = NewGate(f.d, f.lister, GateOptions{Controller: "c", Slots: slots, Key: sharding.ByNamespace, Registerer: f.reg}); err != nil {
		t.Fatal(err)
	}
	f.gate.Attach(f.q)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { f.d.Run(ctx) })
	return f
}

// gain makes the member hold the fixture's slot and tells the Dispatcher,
// as membership does: MayDispatch turns true before Held.
func (f *cacheFixture) gain(t *testing.T) {
	t.Helper()
	f.held.Store(f.slot, true)
	f.d.Held([]int{f.slot})
	if got := <-f.cache.calls; fmt.Sprint(got) != fmt.Sprint([]int{f.slot}) {
		t.Fatalf("SetSlots(%v), want SetSlots([%d])", got, f.slot)
	}
}

func (f *cacheFixture) admit(t *testing.T) controller.Verdict {
	t.Helper()
	v, done := f.gate.Admit(f.key, 0)
	if done != nil {
		done(false)
	}
	return v
}

// A gained slot's keys are refused with Retry (not Skip: the key is ours)
// until SetSlots has returned, so a reconciler never reads NotFound for an
// object that exists; then they are queued and admitted.
func TestHeldWaitsForTheCache(t *testing.T) {
	f := newCacheFixture(t)
	f.gain(t)
	// SetSlots is under way: the slot is held, its object not cached.
	if v := f.admit(t); v != controller.Retry {
		t.Fatalf("Admit of a key of a held slot while SetSlots runs = %v, want Retry (%v)", v, controller.Retry)
	}
	if err := f.d.CacheReady(); err == nil || !strings.Contains(err.Error(), "does not hold slots") {
		t.Errorf("CacheReady() = %v while SetSlots runs, want an error naming the slot", err)
	}
	if n := testutil.ToFloat64(mustSkipped(f.reg).WithLabelValues("c", imetrics.SkippedSlotNotCached)); n != 1 {
		t.Errorf("%s{reason=%q} = %v, want 1", imetrics.ShardingDispatchSkipped, imetrics.SkippedSlotNotCached, n)
	}
	if f.q.Len() != 0 {
		t.Errorf("%d keys queued before the cache holds the slot, want none", f.q.Len())
	}
	f.clock.Step(3 * time.Second) // the cache's sync takes 3s
	f.cache.proceed <- nil
	eventually(t, "the slot's key to be queued once the cache holds it", func() bool { return f.q.Len() == 1 })
	if _, err := f.lister.Get(f.key.Namespace, f.key.Name); err != nil {
		t.Fatalf("the key was queued before the cache held its object: %v", err)
	}
	if n, sum := slotSyncs(t, f.reg); n != 1 || sum != 3 {
		t.Errorf("%s: %d observations summing to %vs, want one of 3s, the gained slot's wait for the cache", imetrics.ShardingSlotSync, n, sum)
	}
	if v := f.admit(t); v != controller.Admit {
		t.Errorf("Admit after SetSlots returned = %v, want Admit", v)
	}
	if err := f.d.CacheReady(); err != nil {
		t.Errorf("CacheReady() = %v once the cache holds the slot", err)
	}
}

// A failed SetSlots leaves the slot refused, says so in CacheReady and
// imetrics.ShardingCacheSetSlotsErrors, and is retried after the backoff.
func TestSetSlotsFailureKeepsRefusing(t *testing.T) {
	f := newCacheFixture(t)
	f.gain(t)
	boom := errors.New("the API server is away")
	f.cache.proceed <- boom
	errs := func() float64 {
		c, _ := f.reg.Gather()
		for _, mf := range c {
			if mf.GetName() == imetrics.ShardingCacheSetSlotsErrors {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return 0
	}
	eventually(t, "the failure to be counted", func() bool { return errs() == 1 })
	if err := f.d.CacheReady(); !errors.Is(err, boom) {
		t.Errorf("CacheReady() = %v after SetSlots failed, want it to wrap %v", err, boom)
	}
	if v := f.admit(t); v != controller.Retry {
		t.Errorf("Admit after SetSlots failed = %v, want Retry", v)
	}
	var retried atomic.Bool
	go func() {
		<-f.cache.calls
		retried.Store(true)
		f.cache.proceed <- nil
	}()
	eventually(t, "Run to wait out its backoff", f.clock.HasWaiters)
	if retried.Load() {
		t.Fatal("SetSlots tried again before the backoff passed")
	}
	f.clock.Step(DefaultMinBackoff)
	eventually(t, "the retry to succeed", func() bool { return f.d.CacheReady() == nil })
	if v := f.admit(t); v != controller.Admit {
		t.Errorf("Admit after the retry succeeded = %v, want Admit", v)
	}
}

// Release drops a slot from the cache only after its reconciles in flight
// have returned.
func TestReleaseDropsTheSlotAfterItsReconciles(t *testing.T) {
	f := newCacheFixture(t)
	f.gain(t)
	f.cache.proceed <- nil
	eventually(t, "the slot to be cached", func() bool { return f.d.CacheReady() == nil })
	v, done := f.gate.Admit(f.key, 0)
	if v != controller.Admit {
		t.Fatalf("Admit = %v, want Admit", v)
	}
	f.held.Delete(f.slot)
	released := make(chan struct{})
	go func() { f.d.Release(t.Context(), []int{f.slot}); close(released) }()
	select {
	case got := <-f.cache.calls:
		t.Fatalf("SetSlots(%v) while a reconcile of the released slot was in flight", got)
	case <-released:
		t.Fatal("Release returned while a reconcile was in flight")
	default:
	}
	done(false)
	<-released
	if got := <-f.cache.calls; len(got) != 0 {
		t.Errorf("SetSlots(%v) after the release, want SetSlots([])", got)
	}
	f.cache.proceed <- nil
	eventually(t, "the cache to drop the slot", func() bool { return len(f.d.Cached()) == 0 })
}

// With a split cache, a key whose object the cache lacks is skipped, not
// retried: the primary source queues the key of every object of this
// replica's slots as it arrives, so retrying only delays other replicas'
// keys (mapped to by watches that are not sharded) until they are dropped.
func TestSplitCacheSkipsUncachedKeys(t *testing.T) {
	f := newCacheFixture(t)
	slots, _ := sharding.NewSlots(gateSlots)
	g, err := NewGate(f.d, f.lister, GateOptions{Controller: "u", Slots: slots, Key: sharding.ByUID})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := g.Admit(reconcile.Request{Namespace: f.key.Namespace, Name: "elsewhere"}, 0); v != controller.Skip {
		t.Errorf("Admit of a key whose object the split cache lacks = %v, want Skip (%v)", v, controller.Skip)
	}
}

// A slot released and held again while the cache drops it is refused
// until the cache holds it again: Release lets the cache drop the slot at
// any time from then on, so what the cache held before is no proof.
func TestRegainedSlotWaitsForTheCache(t *testing.T) {
	f := newCacheFixture(t)
	f.gain(t)
	f.cache.proceed <- nil
	eventually(t, "the slot to be cached", func() bool { return f.d.CacheReady() == nil })
	f.held.Delete(f.slot)
	f.d.Release(t.Context(), []int{f.slot})
	if got := <-f.cache.calls; len(got) != 0 {
		t.Fatalf("SetSlots(%v) after the release, want SetSlots([])", got)
	}
	// The cache is dropping the slot, and the slot is held again.
	f.held.Store(f.slot, true)
	f.d.Held([]int{f.slot})
	if v := f.admit(t); v != controller.Retry {
		t.Errorf("Admit of a regained slot's key while the cache drops the slot = %v, want Retry (%v)", v, controller.Retry)
	}
	f.cache.proceed <- nil
	if got := <-f.cache.calls; fmt.Sprint(got) != fmt.Sprint([]int{f.slot}) {
		t.Fatalf("SetSlots(%v) after the slot was held again, want SetSlots([%d])", got, f.slot)
	}
	f.cache.proceed <- nil
	eventually(t, "the cache to hold the regained slot", func() bool { return f.d.CacheReady() == nil })
	if f.q.Len() != 1 {
		t.Errorf("%d keys queued once the cache holds the regained slot, want 1", f.q.Len())
	}
	if v := f.admit(t); v != controller.Admit {
		t.Errorf("Admit once the cache holds the regained slot = %v, want Admit", v)
	}
}

// A slot released and held again before the cache was asked to drop it
// is not lost: the cache still holds it, and its keys are queued again.
func TestSlotHeldAgainBeforeTheCacheDropsIt(t *testing.T) {
	f := newCacheFixture(t)
	f.gain(t)
	f.cache.proceed <- nil
	eventually(t, "the slot to be cached", func() bool { return f.d.CacheReady() == nil })
	f.held.Delete(f.slot)
	f.d.mu.Lock() // Run waits: Release and Held both happen before its next sync
	f.d.releasing[f.slot] = true
	f.d.unwantLocked([]int{f.slot})
	f.d.mu.Unlock()
	f.held.Store(f.slot, true)
	f.d.Held([]int{f.slot})
	// Run may see the two changes in one sync (the cache holds what it
	// wants: no SetSlots) or in two (SetSlots([]) then SetSlots([slot])).
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-f.cache.calls:
				f.cache.proceed <- nil
			case <-done:
				return
			}
		}
	}()
	eventually(t, "the cache to hold the slot again", func() bool { return f.d.CacheReady() == nil && len(f.d.Cached()) == 1 })
	eventually(t, "the slot's key to be queued again", func() bool { return f.q.Len() == 1 })
	if v := f.admit(t); v != controller.Admit {
		t.Errorf("Admit of the slot held again = %v, want Admit", v)
	}
}

// slotSyncs returns imetrics.ShardingSlotSync's count and sum in reg.
func slotSyncs(t *testing.T, reg prometheus.Gatherer) (uint64, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == imetrics.ShardingSlotSync {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("%s is not registered", imetrics.ShardingSlotSync)
	return 0, 0
}
