package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/util/workqueue"
)

// checkInvariants verifies the queue's structure: every key in items is in
// exactly one of the ready set, the waiting heap and the processing slice,
// once; the counts agree; the rings keep their invariants; the heap is in
// order.
func (q *Queue[K]) checkInvariants() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	where := map[K]string{}
	place := func(k K, in string) error {
		if prev, ok := where[k]; ok {
			return fmt.Errorf("key %v is in %s and in %s", k, prev, in)
		}
		where[k] = in
		if n := q.items[k]; n == nil {
			return fmt.Errorf("key %v in %s but not in items", k, in)
		}
		return nil
	}
	if err := q.ready.age.check(); err != nil {
		return fmt.Errorf("age ring: %w", err)
	}
	if !q.ready.aging && q.ready.age.len() != 0 {
		return fmt.Errorf("age ring holds %d nodes with aging off", q.ready.age.len())
	}
	ages := 0
	for n := range q.ready.age.all() {
		ages++
		if n.state != stateReady {
			return fmt.Errorf("key %v in the age ring in state %d", n.key, n.state)
		}
		if err := place(n.key, "ready"); err != nil {
			return err
		}
	}
	fifo := 0
	for _, b := range q.ready.buckets {
		inBucket := 0
		if err := b.checkGroups(); err != nil {
			return err
		}
		for t := range b.tenantsInTurn {
			{
				if err := t.line.check(); err != nil {
					return fmt.Errorf("line of tenant %q: %w", t.name, err)
				}
				if t.line.len() == 0 {
					return fmt.Errorf("empty tenant %q in the ring of bucket %d", t.name, b.priority)
				}
				if q.ready.fair && b.tenants[t.name] != t {
					return fmt.Errorf("tenant %q in the ring of bucket %d is not the one in its map", t.name, b.priority)
				}
				for n := range t.line.all() {
					inBucket++
					if n.tenantQueue != t || n.state != stateReady {
						return fmt.Errorf("key %v filed under the wrong bucket or tenant, or not ready", n.key)
					}
					if !q.ready.aging {
						if err := place(n.key, "ready"); err != nil {
							return err
						}
					}
				}
			}
		}
		for i, t := range b.recent {
			if t != nil && (b.tenants[t.name] != t || recentSlot(t.name) != i) {
				return fmt.Errorf("tenant %q cached in slot %d of bucket %d is stale", t.name, i, b.priority)
			}
		}
		idle := 0
		for _, t := range b.tenants {
			if t.line.len() == 0 {
				idle++
			}
		}
		if idle != b.idle {
			return fmt.Errorf("bucket %d counts %d idle tenants, holds %d", b.priority, b.idle, idle)
		}
		if inBucket != b.n {
			return fmt.Errorf("bucket %d counts %d, holds %d", b.priority, b.n, inBucket)
		}
		fifo += inBucket
	}
	if q.ready.aging && ages != q.ready.n || fifo != q.ready.n {
		return fmt.Errorf("ready counts %d, age ring holds %d, tenant FIFOs hold %d", q.ready.n, ages, fifo)
	}
	for i, n := range q.waiting {
		if int(n.index) != i || n.state != stateWaiting {
			return fmt.Errorf("waiting key %v at %d has index %d, state %d", n.key, i, n.index, n.state)
		}
		if i > 0 && q.waiting.less(i, (i-1)/2) {
			return fmt.Errorf("waiting key %v at %d comes before its parent", n.key, i)
		}
		if err := place(n.key, "waiting"); err != nil {
			return err
		}
	}
	for i, n := range q.processing {
		if int(n.index) != i || n.state != stateProcessing {
			return fmt.Errorf("key %v in flight at %d has index %d, state %d", n.key, i, n.index, n.state)
		}
		if err := place(n.key, "processing"); err != nil {
			return err
		}
	}
	if err := q.checkInFlight(); err != nil {
		return err
	}
	if len(where) != len(q.items) {
		return fmt.Errorf("items holds %d keys, placed %d", len(q.items), len(where))
	}
	for k, n := range q.items {
		if n.key != k || n.tenantQueue == nil {
			return fmt.Errorf("key %v: node of key %v, line %p", k, n.key, n.tenantQueue)
		}
	}
	return nil
}

// checkInFlight verifies that, once GetSpare has turned counting on, the
// counts of keys in flight per tenant are those of the processing slice.
func (q *Queue[K]) checkInFlight() error {
	if q.spares.inFlight == nil {
		return nil
	}
	want := map[string]int32{}
	regular := 0
	for _, n := range q.processing {
		want[n.tenantQueue.name]++
		if !n.spare {
			regular++
		}
	}
	if diff := cmp.Diff(want, q.spares.inFlight); diff != "" {
		return fmt.Errorf("keys in flight per tenant (-processing +counted):\n%s", diff)
	}
	if regular != q.spares.regular {
		return fmt.Errorf("%d keys Get handed out are in flight, counted %d", regular, q.spares.regular)
	}
	return nil
}

// check verifies the ring's invariants (see ring).
func (r *ring[K]) check() error {
	if len(r.buf)&(len(r.buf)-1) != 0 || int(r.tail-r.head) > len(r.buf) {
		return fmt.Errorf("buffer of %d holds positions %d to %d", len(r.buf), r.head, r.tail)
	}
	if r.head != r.tail && r.front() == nil {
		return fmt.Errorf("hole at head %d", r.head)
	}
	live := 0
	for i, n := range r.buf {
		p := r.head + uint32(i-int(r.head&r.mask()))&r.mask() // the position of slot i
		inside := p-r.head < r.tail-r.head
		switch {
		case n == nil:
		case !inside:
			return fmt.Errorf("node %v in slot %d, outside positions %d to %d", n.key, i, r.head, r.tail)
		case n.pos[r.slot] != p:
			return fmt.Errorf("node %v at position %d says %d", n.key, p, n.pos[r.slot])
		default:
			live++
		}
	}
	if live != r.live {
		return fmt.Errorf("counts %d live nodes, holds %d", r.live, live)
	}
	return nil
}

// FuzzQueue drives random sequences of operations from several producers and
// workers, some of them spare workers (GetSpare), and checks that no key is queued twice, no key is held by two
// workers at once, and nothing is lost through a shutdown with drain.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte("the quick brown fox jumps over the lazy dog, again and again"))
	f.Add([]byte{6, 6, 6, 6, 12, 12, 12, 18, 18, 24, 30, 36, 42, 255, 254, 253})
	f.Add(make([]byte, 64))
	f.Add([]byte("metrics on: the quick brown fox jumps over the lazy dog")) // 'm' is odd
	f.Add([]byte("grouped tenants, metrics on"))                             // 'g' is odd and has its second bit set
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4096 {
			t.Skip("long inputs add time, not coverage")
		}
		opts := Options[int]{
			Tenant:      func(k int) string { return fmt.Sprint(k % 5) },
			MaxWait:     time.Millisecond,
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[int](time.Microsecond, time.Millisecond),
		}
		// Metrics read the clock on every operation, partly before the
		// lock: an input whose first byte is odd turns them on.
		m := newFakeMetrics()
		if len(ops) > 0 && ops[0]%2 == 1 {
			opts.Metrics = m
		}
		// Tenants in two groups, "0" alone and the rest together, when
		// the first byte's second bit is set.
		if len(ops) > 0 && ops[0]&2 != 0 {
			opts.TenantGroup = func(tenant string) string { return strconv.FormatBool(tenant == "0") }
		}
		q := New(opts)
		h := newHarness(q)
		// Spare workers call GetSpare, which hands out only keys of
		// tenants with nothing in flight; checkInvariants checks its
		// counts of keys in flight per tenant.
		const producers, workers, spares = 3, 3, 2
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { h.work(t, w, q.Get) })
		}
		for w := range spares {
			// The first spare serves only while every worker is busy, as
			// package controller's do; the second whenever it may.
			threshold := []int{workers, 0}[w]
			wg.Go(func() {
				h.work(t, workers+w, func() (int, int, bool) { return q.GetSpare(threshold) })
			})
		}
		var pg sync.WaitGroup
		for p := range producers {
			pg.Go(func() {
				for i := p; i < len(ops); i += producers {
					h.do(ops[i])
				}
			})
		}
		pg.Wait()
		if err := q.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		if opts.Metrics != nil {
			q.checkDepth(t, m)
		}
		h.shutDown()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := q.ShutDownWithDrain(ctx); err != nil {
			t.Fatalf("drain: %v", err)
		}
		wg.Wait()
		if err := q.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		h.checkNothingLost(t)
		if opts.Metrics != nil {
			q.checkDepth(t, m)
		}
		_, obs := m.snapshot()
		for name, vs := range obs {
			for _, v := range vs {
				if v < 0 {
					t.Errorf("%s observed %v seconds", name, v)
				}
			}
		}
	})
}

// checkDepth checks that workqueue_depth, summed over priorities, counts
// the ready keys and the keys added again without a delay while being
// processed.
func (q *Queue[K]) checkDepth(t *testing.T, m *fakeMetrics) {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	want := q.ready.n
	for _, n := range q.processing {
		if n.dirty == dirtyNow {
			want++
		}
	}
	values, _ := m.snapshot()
	var got float64
	for name, v := range values {
		if strings.Contains(name, "/depth/") {
			got += v
		}
	}
	if got != float64(want) {
		t.Errorf("depth gauges sum to %v, want %d", got, want)
	}
}

// harness records what the fuzzed producers and workers did. seq orders adds
// and hand-outs: an add numbered after a key's last hand-out must have left
// the key in the queue.
type harness struct {
	q   *Queue[int]
	seq atomic.Int64
	// adding is held (read) across noting and making an add, and (write) by
	// shutDown, so every add is wholly before or after the shutdown; adds
	// after it are ignored by design and not checked.
	adding  sync.RWMutex
	shut    bool
	mu      sync.Mutex
	lastAdd map[int]int64
	lastGet map[int]int64
	busy    map[int]int
	reAdds  map[int]int
}

func newHarness(q *Queue[int]) *harness {
	return &harness{q: q, lastAdd: map[int]int64{}, lastGet: map[int]int64{}, busy: map[int]int{}, reAdds: map[int]int{}}
}

const fuzzKeys = 8

func (h *harness) shutDown() {
	h.adding.Lock()
	defer h.adding.Unlock()
	h.q.ShutDown()
	h.shut = true
}

func (h *harness) do(b byte) {
	k := int(b/7) % fuzzKeys
	h.adding.RLock()
	defer h.adding.RUnlock()
	if !h.shut {
		h.noteAdd(k)
	}
	switch b % 7 {
	case 0, 1:
		h.q.Add(k)
	case 2:
		h.q.AddAfter(k, time.Duration(b%4)*time.Millisecond)
	case 3:
		h.q.AddRateLimited(k)
	case 4:
		h.q.AddWithOpts(AddOpts{Priority: int(b%3) - 1}, k)
	case 5:
		h.q.AddWithOpts(AddOpts{Priority: LowPriority, After: time.Duration(b%3) * time.Millisecond}, k)
	case 6:
		h.q.Forget(k)
		h.q.Add(k)
	}
}

func (h *harness) noteAdd(k int) {
	s := h.seq.Add(1)
	h.mu.Lock()
	h.lastAdd[k] = max(h.lastAdd[k], s)
	h.mu.Unlock()
}

func (h *harness) work(t *testing.T, w int, get func() (int, int, bool)) {
	for {
		k, _, shutdown := get()
		if shutdown {
			return
		}
		s := h.seq.Add(1)
		h.mu.Lock()
		h.lastGet[k] = s
		if other, ok := h.busy[k]; ok {
			t.Errorf("key %d handed to worker %d while worker %d has it", k, w, other)
		}
		h.busy[k] = w
		reAdd := h.reAdds[k] < 2 && k%2 == 0
		if reAdd {
			h.reAdds[k]++
		}
		h.mu.Unlock()
		if reAdd {
			h.adding.RLock()
			if !h.shut {
				h.noteAdd(k)
			}
			h.q.Add(k) // while processing
			h.adding.RUnlock()
		}
		h.mu.Lock()
		delete(h.busy, k)
		h.mu.Unlock()
		h.q.Done(k)
	}
}

func (h *harness) checkNothingLost(t *testing.T) {
	h.q.mu.Lock()
	defer h.q.mu.Unlock()
	for k, added := range h.lastAdd {
		if added > h.lastGet[k] && h.q.items[k] == nil {
			t.Errorf("key %d added (seq %d) after its last hand-out (seq %d) is gone", k, added, h.lastGet[k])
		}
	}
}

// checkGroups verifies a bucket's groups: each group in its ring has ready
// tenants, all its own, and the bucket's tenant served next is the group
// served next's; each tenant of the map is counted in its group.
func (b *bucket[K]) checkGroups() error {
	if b.groups == nil {
		if b.groupRing != nil {
			return fmt.Errorf("bucket %d has a ring of groups but no groups", b.priority)
		}
		return nil
	}
	if (b.groupRing == nil) != (b.ring == nil) || b.groupRing != nil && b.ring != b.groupRing.ring {
		return fmt.Errorf("bucket %d serves tenant %p next, its group served next serves another", b.priority, b.ring)
	}
	seen := map[*tenantGroup[K]]bool{}
	for g := b.groupRing; g != nil; {
		if seen[g] {
			return fmt.Errorf("group %q twice in the ring of bucket %d", g.name, b.priority)
		}
		seen[g] = true
		if b.groups[g.name] != g {
			return fmt.Errorf("group %q in the ring of bucket %d is not the one in its map", g.name, b.priority)
		}
		if g.ring == nil {
			return fmt.Errorf("group %q without a ready tenant in the ring of bucket %d", g.name, b.priority)
		}
		if g.next.prev != g || g.prev.next != g {
			return fmt.Errorf("group ring of bucket %d broken at %q", b.priority, g.name)
		}
		for t := g.ring; ; {
			if t.group != g || t.next.prev != t || t.prev.next != t {
				return fmt.Errorf("tenant %q in the ring of group %q is broken or another group's", t.name, g.name)
			}
			if t = t.next; t == g.ring {
				break
			}
		}
		if g = g.next; g == b.groupRing {
			break
		}
	}
	counts := map[*tenantGroup[K]]int{}
	for _, t := range b.tenants {
		if t.group == nil || b.groups[t.group.name] != t.group {
			return fmt.Errorf("tenant %q of bucket %d has no group in the map", t.name, b.priority)
		}
		counts[t.group]++
	}
	for name, g := range b.groups {
		if counts[g] != g.tenants {
			return fmt.Errorf("group %q of bucket %d counts %d tenants, has %d", name, b.priority, g.tenants, counts[g])
		}
		if g.ring != nil && !seen[g] {
			return fmt.Errorf("group %q of bucket %d has ready tenants but is not in the ring", name, b.priority)
		}
	}
	return nil
}
