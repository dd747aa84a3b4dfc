package queue

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/opkit-dev/opkit/internal/queueaccess"
)

// testPermit is a permit the test grants by hand: Acquire waits for a
// grant or for its context.
type testPermit struct {
	grants chan struct{}

	mu                            sync.Mutex
	held                          bool
	acquiring, acquired, released int
}

func newTestPermit() *testPermit { return &testPermit{grants: make(chan struct{}, 1)} }

func (p *testPermit) Acquire(ctx context.Context) error {
	p.mu.Lock()
	if p.held {
		p.mu.Unlock()
		return nil
	}
	p.acquiring++
	p.mu.Unlock()
	select {
	case <-p.grants:
		p.mu.Lock()
		defer p.mu.Unlock()
		p.acquiring--
		p.acquired++
		p.held = true
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		p.acquiring--
		return context.Cause(ctx)
	}
}

func (p *testPermit) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		p.held = false
		p.released++
	}
}

// state returns how many Acquires wait, and whether the permit is held.
func (p *testPermit) state() (acquiring int, held bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acquiring, p.held
}

// releases returns how many times the permit was released while held.
func (p *testPermit) releases() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.released
}

var _ queueaccess.Permit = (*testPermit)(nil)

// permittedGet calls Internal's GetChanged (workers < 0) or
// GetSpareChanged(workers) with p in a goroutine, and returns what it
// hands out, once it has; the channel is closed without a key at shutdown.
func permittedGet[K comparable](ctx context.Context, q *Queue[K], workers int, p queueaccess.Permit) <-chan K {
	got := make(chan K, 1)
	go func() {
		i := Internal(q, queueaccess.Key{})
		var k K
		var shutdown bool
		if workers < 0 {
			k, _, _, shutdown = i.GetChanged(ctx, p)
		} else {
			k, _, _, shutdown = i.GetSpareChanged(ctx, workers, p)
		}
		if !shutdown {
			got <- k
		}
		close(got)
	}()
	return got
}

// A worker waiting for its permit leaves the keys in the queue, and takes
// the one first when the permit comes: a key of higher priority added
// meanwhile goes before the one that was ready when the wait began.
func TestPermittedGetTakesTheFirstKeyWhenThePermitComes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{})
		q.AddWithOpts(AddOpts{Priority: LowPriority}, "low")
		p := newTestPermit()
		got := permittedGet(t.Context(), q, -1, p)
		synctest.Wait()
		if n, _ := p.state(); n != 1 || q.Len() != 1 {
			t.Fatalf("with a key ready: %d Acquires waiting, %d keys ready; want 1 and 1", n, q.Len())
		}
		q.AddWithOpts(AddOpts{Priority: 10}, "high")
		p.grants <- struct{}{}
		synctest.Wait()
		if k, ok := received(got); !ok || k != "high" {
			t.Fatalf("handed out %q (%v) once the permit came, want high", k, ok)
		}
		if _, held := p.state(); !held {
			t.Error("the key was handed out without the permit held")
		}
	})
}

// A worker with nothing to take holds no permit and waits for none.
func TestPermittedGetHoldsNoPermitWhileIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{})
		p := newTestPermit()
		got := permittedGet(t.Context(), q, -1, p)
		synctest.Wait()
		if n, held := p.state(); n != 0 || held {
			t.Fatalf("with no key ready: %d Acquires waiting, permit held %v; want none", n, held)
		}
		q.Add("a")
		synctest.Wait()
		if n, _ := p.state(); n != 1 {
			t.Fatalf("with a key ready: %d Acquires waiting, want 1", n)
		}
		p.grants <- struct{}{}
		synctest.Wait()
		if k, ok := received(got); !ok || k != "a" {
			t.Fatalf("handed out %q (%v), want a", k, ok)
		}
	})
}

// A key another worker took while this one waited for its permit: the
// permit goes back, and the worker waits for the next key holding none.
func TestPermittedGetReleasesWhenTheKeyIsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{})
		q.Add("a")
		p := newTestPermit()
		got := permittedGet(t.Context(), q, -1, p)
		synctest.Wait()
		if k, _ := mustGet(t, q); k != "a" {
			t.Fatalf("Get handed out %q, want a", k)
		}
		p.grants <- struct{}{}
		synctest.Wait()
		if n, held := p.state(); n != 0 || held || p.releases() != 1 {
			t.Fatalf("after the key was gone: %d Acquires waiting, held %v, %d released; want 0, false, 1", n, held, p.releases())
		}
		if _, ok := received(got); ok {
			t.Fatal("a key was handed out with none ready")
		}
		q.Add("b")
		synctest.Wait()
		p.grants <- struct{}{}
		synctest.Wait()
		if k, ok := received(got); !ok || k != "b" {
			t.Fatalf("handed out %q (%v), want b", k, ok)
		}
	})
}

// Workers wait for permits only for as many keys as are ready, so that
// the permits granted go to keys.
func TestPermittedGetsWaitOnePerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{})
		q.Add("a")
		ps := []*testPermit{newTestPermit(), newTestPermit(), newTestPermit()}
		for _, p := range ps {
			permittedGet(t.Context(), q, -1, p)
		}
		waiting := func() int {
			synctest.Wait()
			n := 0
			for _, p := range ps {
				a, _ := p.state()
				n += a
			}
			return n
		}
		if n := waiting(); n != 1 {
			t.Fatalf("3 workers, 1 key ready: %d wait for permits, want 1", n)
		}
		q.Add("b")
		if n := waiting(); n != 2 {
			t.Fatalf("3 workers, 2 keys ready: %d wait for permits, want 2", n)
		}
	})
}

// A worker whose context ends while it waits for its permit takes
// nothing: the key stays ready for others.
func TestPermittedGetEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{})
		q.Add("a")
		p := newTestPermit()
		ctx, cancel := context.WithCancel(t.Context())
		got := permittedGet(ctx, q, -1, p)
		synctest.Wait()
		cancel()
		synctest.Wait()
		if k, ok := <-got; ok {
			t.Fatalf("handed out %q after its context ended", k)
		}
		if n, held := p.state(); n != 0 || held || q.Len() != 1 {
			t.Errorf("after the context ended: %d Acquires waiting, held %v, %d keys ready; want 0, false, 1", n, held, q.Len())
		}
		// The key is another worker's to take.
		p2 := newTestPermit()
		p2.grants <- struct{}{}
		if k, ok := <-permittedGet(t.Context(), q, -1, p2); !ok || k != "a" {
			t.Errorf("the next worker got %q (%v), want a", k, ok)
		}
	})
}

// A queue shut down while a worker waits for its permit hands out
// nothing, and the permit, once granted, goes back.
func TestPermittedGetEndsAtShutDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{})
		q.Add("a")
		p := newTestPermit()
		got := permittedGet(t.Context(), q, -1, p)
		synctest.Wait()
		// Parked: the one key ready has a worker waiting for its permit.
		idle := permittedGet(t.Context(), q, -1, newTestPermit())
		synctest.Wait()
		if n, _ := p.state(); n != 1 {
			t.Fatalf("%d Acquires waiting, want 1", n)
		}
		q.ShutDown()
		p.grants <- struct{}{}
		synctest.Wait()
		if _, ok := received(got); ok {
			t.Error("a key was handed out after ShutDown")
		}
		if _, ok := received(idle); ok {
			t.Error("an idle worker got a key after ShutDown")
		}
		if _, held := p.state(); held || p.releases() != 1 {
			t.Errorf("the permit granted after ShutDown: held %v, released %d times; want false, 1", held, p.releases())
		}
	})
}

// A spare waits for its permit only once a key it may take is ready: not
// for a key of a tenant with a key in flight.
func TestPermittedSpareGet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{Tenant: tenantOf})
		q.Add("flood/1")
		q.Add("flood/2")
		if k, _ := mustGet(t, q); k != "flood/1" {
			t.Fatalf("Get handed out %q, want flood/1", k)
		}
		p := newTestPermit()
		got := permittedGet(t.Context(), q, 1, p)
		synctest.Wait()
		if n, _ := p.state(); n != 0 {
			t.Fatalf("only keys of a tenant in flight ready: the spare waits for %d permits, want 0", n)
		}
		q.Add("quiet/1")
		synctest.Wait()
		if n, _ := p.state(); n != 1 {
			t.Fatalf("a quiet tenant's key ready: the spare waits for %d permits, want 1", n)
		}
		p.grants <- struct{}{}
		synctest.Wait()
		if k, ok := received(got); !ok || k != "quiet/1" {
			t.Fatalf("the spare got %q (%v), want quiet/1", k, ok)
		}
	})
}
