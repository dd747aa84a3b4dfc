package cache_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// TestShardedWrittenOfUnheldSlot: a write of an object of a slot the cache
// does not hold has nothing to wait for (the cache will never hold it),
// while one of a held slot waits until the cache has it.
func TestShardedWrittenOfUnheldSlot(t *testing.T) {
	ns := env.Namespace(t)
	s, _ := sharding.NewSlots(shardSlots)
	sc := newShardedCache(t, ns, 0, shardSlots, slotRange(0, 7))
	for range 20 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "w-", Namespace: ns}}
		got, err := env.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w := cache.Internal(sc.c, cacheaccess.Key{}).Written(configMapGVK, got, false)
		if err := w.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, err = sc.lister.Get(ns, got.Name)
		held := s.SlotOf(sharding.ByUID, got) < 8
		if held != (err == nil) {
			t.Fatalf("%s of slot %d: after Written.Wait, Get returned %v", got.Name, s.SlotOf(sharding.ByUID, got), err)
		}
	}
}

// TestShardedMetadataAndLazy: metadata-only and Lazy types hold only their
// slots' objects too; a Lazy Get of another slot's object is NotFound
// without a fetch.
func TestShardedMetadataAndLazy(t *testing.T) {
	ns := env.Namespace(t)
	objs := createShardConfigMaps(t, ns, 200)
	s, _ := sharding.NewSlots(shardSlots)
	c := newCache(t, cache.Options{Sharding: cache.ShardingOptions{Slots: s}})
	opts := cache.TypeOptions{Namespaces: []string{ns}, Sharded: true}
	m, err := cache.Metadata(c, configMapGVK, opts)
	if err != nil {
		t.Fatal(err)
	}
	held := slotRange(3, 9)
	if err := c.SetSlots(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	start(t, c)
	lazy, err := cache.Lazy[*corev1.ConfigMap](c, opts) // after Start: made with the slots set
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := bySlot(shardSlots, objs, sharding.ByUID, held)
	got, err := m.List(ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(objNames(got), want) {
		t.Errorf("metadata Lister holds %d objects, want the %d of slots %v", len(got), len(want), held)
	}
	for name, o := range objs {
		full, err := lazy.Get(t.Context(), ns, name)
		switch slot := s.SlotOf(sharding.ByUID, o); {
		case slices.Contains(held, slot) && err != nil:
			t.Errorf("Lazy Get of %s (slot %d, held): %v", name, slot, err)
		case slices.Contains(held, slot) && full.UID != o.UID:
			t.Errorf("Lazy Get of %s returned UID %s, want %s", name, full.UID, o.UID)
		case !slices.Contains(held, slot) && !apierrors.IsNotFound(err):
			t.Errorf("Lazy Get of %s (slot %d, not held) = %v, want NotFound", name, slot, err)
		}
	}
}

// TestShardedByControllerOwner: children land in their controller owner's
// slot, filtered in the cache even where the API server applies shard
// selectors (it cannot select on an owner).
func TestShardedByControllerOwner(t *testing.T) {
	ns := env.Namespace(t)
	parents := createShardConfigMaps(t, ns, 16)
	children := map[string]*corev1.ConfigMap{}
	for pname, p := range parents {
		for j := range 3 {
			child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-child-%d", pname, j), Namespace: ns,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(p, corev1.SchemeGroupVersion.WithKind("ConfigMap"))},
			}}
			got, err := env.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), child, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			children[got.Name] = got
		}
	}
	rec := &selectorRecorder{}
	s, _ := sharding.NewSlots(shardSlots)
	c := newCache(t, cache.Options{HTTPClient: rec.client(t), Sharding: cache.ShardingOptions{Slots: s, ServerFilter: cache.ServerFilterOn}})
	l, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Namespaces: []string{ns}, Sharded: true, ShardKey: sharding.ByControllerOwner})
	if err != nil {
		t.Fatal(err)
	}
	held := slotRange(0, 7)
	if err := c.SetSlots(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	left := make(chan string, 100)
	if _, err := l.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		left <- obj.(metav1.Object).GetName()
	}}); err != nil {
		t.Fatal(err)
	}
	start(t, c)
	all := map[string]*corev1.ConfigMap{}
	for _, m := range []map[string]*corev1.ConfigMap{parents, children} {
		for k, v := range m {
			all[k] = v
		}
	}
	want := bySlot(shardSlots, all, sharding.ByControllerOwner, held)
	got, err := l.List(ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(objNames(got), want) {
		t.Errorf("holds %d objects, want the %d whose controller owner (or own UID) is in slots %v", len(got), len(want), held)
	}
	for _, o := range got {
		if p := parents[strings.SplitN(o.Name, "-child-", 2)[0]]; !slices.Contains(held, s.SlotOf(sharding.ByUID, p)) {
			t.Errorf("%s is held, but its parent %s is of slot %d", o.Name, p.Name, s.SlotOf(sharding.ByUID, p))
		}
	}
	if sel := rec.selectors(); len(sel) > 0 {
		t.Errorf("ByControllerOwner sent shard selectors %q; the API server cannot select on an owner", sel)
	}
	moveOwner(t, c, l, ns, parents, children, held, left)
}

// selectorRecorder records the shard selectors of the ConfigMap lists and
// watches that pass through it.
type selectorRecorder struct {
	mu   sync.Mutex
	seen []string
	next http.RoundTripper
}

func (s *selectorRecorder) client(t *testing.T) *http.Client {
	return wrappedClient(t, func(next http.RoundTripper) http.RoundTripper { s.next = next; return s })
}

func (s *selectorRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if sel := req.URL.Query().Get("shardSelector"); sel != "" && strings.HasSuffix(req.URL.Path, "/configmaps") {
		s.mu.Lock()
		s.seen = append(s.seen, sel)
		s.mu.Unlock()
	}
	return s.next.RoundTrip(req)
}

func (s *selectorRecorder) selectors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// TestShardedSelectorsSent: with support detected (an API server with the
// ShardedListAndWatch gate on), lists and watches carry the slots'
// selector (the probe's malformed one aside); without it, or filtered in
// the cache, they carry none.
func TestShardedSelectorsSent(t *testing.T) {
	s, _ := sharding.NewSlots(shardSlots)
	want, _ := s.Selector(sharding.ByUID, slotRange(2, 5))
	detected := []string{want}
	if on, _ := env.FeatureGate("ShardedListAndWatch"); !on {
		detected = nil
	}
	for _, tc := range []struct {
		filter cache.ServerFilter
		want   []string
	}{{cache.ServerFilterDetect, detected}, {cache.ServerFilterOff, nil}} {
		t.Run(fmt.Sprint(tc.filter), func(t *testing.T) {
			ns := env.Namespace(t)
			rec := &selectorRecorder{}
			c := newCache(t, cache.Options{HTTPClient: rec.client(t), Sharding: cache.ShardingOptions{Slots: s, ServerFilter: tc.filter}})
			if _, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Namespaces: []string{ns}, Sharded: true}); err != nil {
				t.Fatal(err)
			}
			if err := c.SetSlots(t.Context(), slotRange(2, 5)); err != nil {
				t.Fatal(err)
			}
			start(t, c)
			got := slices.Compact(slices.DeleteFunc(rec.selectors(), func(s string) bool { return strings.Contains(s, "'0x0'") }))
			if !slices.Equal(got, tc.want) {
				t.Errorf("shard selectors sent: %q, want %q", got, tc.want)
			}
		})
	}
}

// TestShardedSlotsLifecycle: a sharded type holds nothing and watches
// nothing until SetSlots; emptying its slots hands handlers a delete of
// everything; opkit_cache_slots follows.
func TestShardedSlotsLifecycle(t *testing.T) {
	ns := env.Namespace(t)
	objs := createShardConfigMaps(t, ns, 40)
	s, _ := sharding.NewSlots(shardSlots)
	rec := &selectorRecorder{}
	reg := prometheus.NewRegistry()
	c := newCache(t, cache.Options{HTTPClient: rec.client(t), Registerer: reg, Sharding: cache.ShardingOptions{Slots: s}})
	l, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Namespaces: []string{ns}, Sharded: true})
	if err != nil {
		t.Fatal(err)
	}
	ev := newEvents()
	h, err := l.AddEventHandler(ev.handler())
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	if got, _ := l.List(ns, nil); len(got) != 0 || !h.HasSynced() {
		t.Fatalf("before SetSlots: %d objects, handler synced %v; want none, synced", len(got), h.HasSynced())
	}
	slotsMetric := func(n int) {
		t.Helper()
		want := fmt.Sprintf("# HELP %s Slots a sharded type holds, by type.\n# TYPE %s gauge\n%s{form=\"typed\",group=\"\",kind=\"ConfigMap\",scope=%q,version=\"v1\"} %d\n",
			imetrics.CacheSlots, imetrics.CacheSlots, imetrics.CacheSlots, ns, n)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), imetrics.CacheSlots); err != nil {
			t.Error(err)
		}
	}
	slotsMetric(0)
	if err := c.SetSlots(t.Context(), slotRange(0, shardSlots-1)); err != nil {
		t.Fatal(err)
	}
	slotsMetric(shardSlots)
	if st := c.Status(); len(st) != 1 || !slices.Equal(st[0].Slots, slotRange(0, shardSlots-1)) {
		t.Errorf("Status() = %+v, want one type holding every slot", st)
	}
	every := bySlot(shardSlots, objs, sharding.ByUID, slotRange(0, shardSlots-1))
	if got, _ := l.List(ns, nil); !slices.Equal(objNames(got), every) {
		t.Errorf("holding every slot: %d objects, want %d", len(got), len(every))
	}
	if err := c.SetSlots(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	slotsMetric(0)
	if got, _ := l.List(ns, nil); len(got) != 0 {
		t.Errorf("after giving every slot up: %d objects, want none", len(got))
	}
	if got := ev.names(func(e *events) map[string]int { return e.delete }); !slices.Equal(got, every) {
		t.Errorf("giving every slot up handed %d deletes, want %d", len(got), len(every))
	}
	if st := c.Status(); len(st) != 1 || len(st[0].Slots) != 0 {
		t.Errorf("Status() = %+v, want one type holding no slot", st)
	}
}

func TestSetSlotsErrors(t *testing.T) {
	s, _ := sharding.NewSlots(4)
	c := newCache(t, cache.Options{Sharding: cache.ShardingOptions{Slots: s}})
	if err := c.SetSlots(t.Context(), []int{0}); !errors.Is(err, cache.ErrNotSharded) {
		t.Errorf("SetSlots without a sharded type = %v, want ErrNotSharded", err)
	}
	if _, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Sharded: true}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetSlots(t.Context(), []int{4}); !errors.Is(err, sharding.ErrInvalidSlots) {
		t.Errorf("SetSlots of slot 4 of 4 = %v, want ErrInvalidSlots", err)
	}
	if _, err := cache.Register[*corev1.Secret](c, cache.TypeOptions{ShardKey: sharding.ByNamespace}); err == nil {
		t.Error("ShardKey without Sharded: no error")
	}
}

// ignoreSelectors is an API server without the ShardedListAndWatch gate,
// as its clients see it: it drops every shard selector unread, the probe's
// malformed one included.
type ignoreSelectors struct{ next http.RoundTripper }

func (i ignoreSelectors) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if q.Has("shardSelector") {
		req = req.Clone(req.Context())
		q.Del("shardSelector")
		req.URL.RawQuery = q.Encode()
	}
	return i.next.RoundTrip(req)
}

// TestShardedServerIgnoringSelectors: against an API server that ignores
// shard selectors, detection says so, and the cache filters by itself: a
// sharded type still holds exactly its slots' objects and its handlers are
// handed only those.
func TestShardedServerIgnoringSelectors(t *testing.T) {
	ns := env.Namespace(t)
	objs := createShardConfigMaps(t, ns, 120)
	rec := &selectorRecorder{}
	hc := rec.client(t)
	rec.next = ignoreSelectors{next: rec.next}
	s, _ := sharding.NewSlots(shardSlots)
	c := newCache(t, cache.Options{HTTPClient: hc, Sharding: cache.ShardingOptions{Slots: s}})
	l, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Namespaces: []string{ns}, Sharded: true})
	if err != nil {
		t.Fatal(err)
	}
	ev := newEvents()
	h, err := l.AddEventHandler(ev.handler())
	if err != nil {
		t.Fatal(err)
	}
	held := []int{1, 4, 5, 6, 12}
	if err := c.SetSlots(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	start(t, c)
	if !toolscache.WaitForCacheSync(t.Context().Done(), h.HasSynced) {
		t.Fatal("handler not synced")
	}
	want := bySlot(shardSlots, objs, sharding.ByUID, held)
	got, err := l.List(ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(objNames(got), want) {
		t.Errorf("holds %d objects, want the %d of slots %v", len(got), len(want), held)
	}
	if added := ev.names(func(e *events) map[string]int { return e.added }); !slices.Equal(added, want) {
		t.Errorf("handler was handed %d adds, want %d", len(added), len(want))
	}
	if sel := slices.DeleteFunc(rec.selectors(), func(s string) bool { return strings.Contains(s, "'0x0'") }); len(sel) > 0 {
		t.Errorf("sent shard selectors %q to a server that ignores them: detection failed", sel)
	}
}

// moveOwner gives a held child an owner of a slot not held, and a child
// not held an owner of a held slot: the first leaves the cache as a
// delete, the second enters it.
func moveOwner(t *testing.T, c *cache.Cache, l *cache.Lister[*corev1.ConfigMap], ns string, parents, children map[string]*corev1.ConfigMap, held []int, left <-chan string) {
	t.Helper()
	s, _ := sharding.NewSlots(shardSlots)
	var heldParent, freeParent *corev1.ConfigMap
	for _, p := range parents {
		if slices.Contains(held, s.SlotOf(sharding.ByUID, p)) {
			heldParent = p
		} else {
			freeParent = p
		}
	}
	if heldParent == nil || freeParent == nil {
		t.Skip("the random UIDs put every parent on one side")
	}
	reown := func(name string, to *corev1.ConfigMap) *corev1.ConfigMap {
		child := children[name].DeepCopy()
		child.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(to, corev1.SchemeGroupVersion.WithKind("ConfigMap"))}
		got, err := env.Client().CoreV1().ConfigMaps(ns).Update(t.Context(), child, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	leaving := heldParent.Name + "-child-0"
	reown(leaving, freeParent)
	select {
	case name := <-left:
		if name != leaving {
			t.Errorf("delete of %s, want %s", name, leaving)
		}
	case <-t.Context().Done():
		t.Fatal("no delete of the child whose owner moved out")
	}
	if _, err := l.Get(ns, leaving); !apierrors.IsNotFound(err) {
		t.Errorf("Get of %s after its owner moved out = %v, want NotFound", leaving, err)
	}
	entering := reown(freeParent.Name+"-child-0", heldParent)
	if err := cache.Internal(c, cacheaccess.Key{}).Written(configMapGVK, entering, false).Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ns, entering.Name); err != nil {
		t.Errorf("Get of %s after its owner moved in: %v", entering.Name, err)
	}
}

// TestSetSlotsGivesUp: a SetSlots whose context ends before the new
// informers sync leaves the old slots in place, takes back with deletes
// any add it handed on of the new ones, and can be called again.
func TestSetSlotsGivesUp(t *testing.T) {
	ns := env.Namespace(t)
	objs := createShardConfigMaps(t, ns, 60)
	sc := newShardedCache(t, ns, 0, shardSlots, slotRange(0, 7))
	sc.ev.reset()
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(errors.New("test gives up"))
	err := sc.c.SetSlots(ctx, slotRange(0, 15))
	if !errors.Is(err, cache.ErrNotSynced) || context.Cause(ctx) == nil || !strings.Contains(err.Error(), "test gives up") {
		t.Fatalf("SetSlots with an ended context = %v, want ErrNotSynced and the cause", err)
	}
	sc.holdsExactly(t, ns, bySlot(shardSlots, objs, sharding.ByUID, slotRange(0, 7)))
	if st := sc.c.Status(); !slices.Equal(st[0].Slots, slotRange(0, 7)) {
		t.Errorf("Status().Slots = %v after giving up, want the old slots", st[0].Slots)
	}
	added := sc.ev.names(func(e *events) map[string]int { return e.added })
	deleted := sc.ev.names(func(e *events) map[string]int { return e.delete })
	// Each add is taken back; a delete may come of an object whose add the
	// dropped informer had not handed on yet.
	for _, name := range added {
		if !slices.Contains(deleted, name) {
			t.Errorf("giving up: the add of %s was not taken back", name)
		}
	}
	if err := sc.c.SetSlots(t.Context(), slotRange(0, 15)); err != nil {
		t.Fatal(err)
	}
	sc.holdsExactly(t, ns, bySlot(shardSlots, objs, sharding.ByUID, slotRange(0, 15)))
}

// holdSelector blocks the lists and watches that carry selector until
// release is closed, and says on arrived when the first one comes.
type holdSelector struct {
	next     http.RoundTripper
	selector string
	arrived  chan struct{}
	once     sync.Once
	release  chan struct{}
}

func (h *holdSelector) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("shardSelector") == h.selector {
		h.once.Do(func() { close(h.arrived) })
		select {
		case <-h.release:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	return h.next.RoundTrip(req)
}

// TestHandlerAddedDuringSetSlots: a handler added while SetSlots waits for
// the new informers is attached to them too, and is handed the gained
// slots' objects.
func TestHandlerAddedDuringSetSlots(t *testing.T) {
	ns := env.Namespace(t)
	objs := createShardConfigMaps(t, ns, 60)
	s, _ := sharding.NewSlots(shardSlots)
	sel, _ := s.Selector(sharding.ByUID, slotRange(0, 15))
	hold := &holdSelector{selector: sel, arrived: make(chan struct{}), release: make(chan struct{})}
	hc := wrappedClient(t, func(next http.RoundTripper) http.RoundTripper { hold.next = next; return hold })
	c := newCache(t, cache.Options{HTTPClient: hc, Sharding: cache.ShardingOptions{Slots: s, ServerFilter: cache.ServerFilterOn}})
	l, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Namespaces: []string{ns}, Sharded: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetSlots(t.Context(), slotRange(0, 7)); err != nil {
		t.Fatal(err)
	}
	start(t, c)
	done := make(chan error, 1)
	go func() { done <- c.SetSlots(t.Context(), slotRange(0, 15)) }()
	<-hold.arrived
	ev := newEvents()
	reg, err := l.AddEventHandler(ev.handler())
	if err != nil {
		t.Fatal(err)
	}
	close(hold.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The hold meets the new informers' watch: their list is of the gained
	// slots alone, at the old store's version. SetSlots may then return
	// before the handler, added late in the swap, has been handed the
	// initial list; its registration says when it has.
	waitFor(t, 10*time.Second, reg.HasSynced)
	want := bySlot(shardSlots, objs, sharding.ByUID, slotRange(8, 15))
	added := ev.names(func(e *events) map[string]int { return e.added })
	for _, name := range want {
		if !slices.Contains(added, name) {
			t.Errorf("handler added during SetSlots was not handed %s, of a gained slot", name)
		}
	}
}
