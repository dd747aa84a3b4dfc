package queue

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newQueue returns a queue that is shut down when the test ends.
func newQueue[K comparable](t *testing.T, opts Options[K]) *Queue[K] {
	t.Helper()
	q := New(opts)
	t.Cleanup(q.ShutDown)
	return q
}

// mustGet gets a key; it fails the test rather than block if none is ready.
func mustGet[K comparable](t *testing.T, q *Queue[K]) (K, int) {
	t.Helper()
	if q.Len() == 0 {
		t.Fatalf("Get: nothing ready")
	}
	k, p, shutdown := q.Get()
	if shutdown {
		t.Fatalf("Get: shut down")
	}
	return k, p
}

func drain[K comparable](t *testing.T, q *Queue[K]) []K {
	t.Helper()
	var got []K
	for q.Len() > 0 {
		k, _ := mustGet(t, q)
		q.Done(k)
		got = append(got, k)
	}
	return got
}

func TestAddDeduplicates(t *testing.T) {
	q := newQueue(t, Options[string]{})
	for _, k := range []string{"a", "b", "a", "c", "b", "a"} {
		q.Add(k)
	}
	if got := q.Len(); got != 3 {
		t.Fatalf("Len = %d, want 3", got)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, drain(t, q)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestKeyNotHandedOutTwiceWhileProcessing(t *testing.T) {
	q := newQueue(t, Options[string]{})
	q.Add("a")
	k, _ := mustGet(t, q)
	q.Add("a") // while processing: remembered, not handed out
	if got := q.Len(); got != 0 {
		t.Fatalf("Len while a is processing = %d, want 0", got)
	}
	q.Done(k)
	if got := q.Len(); got != 1 {
		t.Fatalf("Len after Done = %d, want 1 (the re-add)", got)
	}
	if k, _ := mustGet(t, q); k != "a" {
		t.Fatalf("Get = %q, want a", k)
	}
}

func TestDoneWithoutReAddForgetsKey(t *testing.T) {
	q := newQueue(t, Options[string]{})
	q.Add("a")
	k, _ := mustGet(t, q)
	q.Done(k)
	q.Done(k) // a second Done does nothing
	if q.Len() != 0 || len(q.items) != 0 {
		t.Fatalf("after Done: Len %d, items %d; want 0, 0", q.Len(), len(q.items))
	}
}

func TestPriorities(t *testing.T) {
	q := newQueue(t, Options[string]{})
	q.AddWithOpts(AddOpts{Priority: LowPriority}, "low1", "low2")
	q.Add("normal")
	q.AddWithOpts(AddOpts{Priority: 10}, "high")
	q.AddWithOpts(AddOpts{Priority: 10}, "low2") // a re-add with a higher priority raises it
	q.AddWithOpts(AddOpts{Priority: LowPriority}, "normal")

	var got []string
	var prios []int
	for q.Len() > 0 {
		k, p := mustGet(t, q)
		q.Done(k)
		got, prios = append(got, k), append(prios, p)
	}
	if diff := cmp.Diff([]string{"high", "low2", "normal", "low1"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{10, 10, 0, LowPriority}, prios); diff != "" {
		t.Errorf("priorities (-want +got):\n%s", diff)
	}
}

func TestReAddWhileProcessingKeepsHighestPriority(t *testing.T) {
	q := newQueue(t, Options[string]{})
	q.Add("a")
	k, _ := mustGet(t, q)
	q.AddWithOpts(AddOpts{Priority: LowPriority}, "a")
	q.AddWithOpts(AddOpts{Priority: 5}, "a")
	q.AddWithOpts(AddOpts{Priority: 1}, "a")
	q.Done(k)
	if _, p := mustGet(t, q); p != 5 {
		t.Errorf("priority after Done = %d, want 5", p)
	}
}

func TestDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{})
		q.AddAfter("a", 10*time.Second)
		q.AddAfter("a", 3*time.Second) // of two delayed adds the earlier wins
		q.AddAfter("a", 7*time.Second)
		q.AddAfter("b", 5*time.Second)
		q.AddAfter("c", 5*time.Second)
		q.Add("c") // now beats later
		synctest.Wait()
		if got := drain(t, q); !cmp.Equal(got, []string{"c"}) {
			t.Fatalf("at 0s got %v, want [c]", got)
		}

		time.Sleep(3 * time.Second)
		synctest.Wait()
		if got := drain(t, q); !cmp.Equal(got, []string{"a"}) {
			t.Fatalf("at 3s got %v, want [a]", got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := drain(t, q); !cmp.Equal(got, []string{"b"}) {
			t.Fatalf("at 5s got %v, want [b]", got)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if q.Len() != 0 || len(q.items) != 0 {
			t.Fatalf("a's later delays fired too: Len %d, items %d", q.Len(), len(q.items))
		}
	})
}

func TestDelayedReAddWhileProcessing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{})
		q.Add("a")
		k, _ := mustGet(t, q)
		q.AddAfter("a", 2*time.Second)
		q.Done(k)
		synctest.Wait()
		if q.Len() != 0 {
			t.Fatal("delayed re-add became ready before its delay")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := drain(t, q); !cmp.Equal(got, []string{"a"}) {
			t.Fatalf("after the delay got %v, want [a]", got)
		}
	})
}

func TestRateLimitedAndForget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{})
		// The default limiter: 5ms, 10ms, 20ms, ... per key.
		for i, want := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond} {
			start := time.Now()
			q.AddRateLimited("a")
			k, _, _ := q.Get()
			if waited := time.Since(start); waited != want {
				t.Errorf("retry %d: waited %v, want %v", i+1, waited, want)
			}
			q.Done(k)
		}
		if got := q.NumRequeues("a"); got != 3 {
			t.Errorf("NumRequeues = %d, want 3", got)
		}
		q.Forget("a")
		if got := q.NumRequeues("a"); got != 0 {
			t.Errorf("NumRequeues after Forget = %d, want 0", got)
		}
		start := time.Now()
		q.AddWithOpts(AddOpts{RateLimited: true, After: time.Second}, "a")
		k, _, _ := q.Get()
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("RateLimited with a longer After: waited %v, want 1s", waited)
		}
		q.Done(k)
	})
}

func TestGetBlocksUntilAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{})
		got := make(chan string)
		go func() {
			k, _, _ := q.Get()
			got <- k
		}()
		synctest.Wait() // the getter is parked
		q.Add("a")
		if k := <-got; k != "a" {
			t.Fatalf("Get = %q, want a", k)
		}
	})
}

// An add of a key already queued wakes no Get (unlock then stores nothing),
// and no wake-up is lost for the keys added around it.
func TestReAddOfQueuedKeyLosesNoWakeUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{Tenant: func(string) string { return "" }})
		got := make(chan string, 2)
		for range 2 {
			go func() {
				k, _, _ := q.Get()
				got <- k
			}()
		}
		synctest.Wait() // both getters are parked
		q.Add("a")
		q.Add("a")
		synctest.Wait()
		if len(got) != 1 || q.Len() != 0 {
			t.Fatalf("after adding a twice: %d Gets returned, Len %d; want 1, 0", len(got), q.Len())
		}
		q.Add("b")
		keys := []string{<-got, <-got}
		if diff := cmp.Diff([]string{"a", "b"}, keys); diff != "" {
			t.Errorf("keys handed out (-want +got):\n%s", diff)
		}
	})
}

func TestShutDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{})
		q.Add("queued")
		blocked := make(chan bool)
		q2 := New(Options[string]{})
		go func() {
			_, _, shutdown := q2.Get()
			blocked <- shutdown
		}()
		synctest.Wait()
		q.ShutDown()
		q2.ShutDown()
		if !<-blocked {
			t.Error("a blocked Get did not return shutdown")
		}
		if _, _, shutdown := q.Get(); !shutdown {
			t.Error("Get after ShutDown handed out a key")
		}
		q.Add("late")
		if got := q.Len(); got != 1 {
			t.Errorf("Len = %d, want 1: ShutDown keeps queued keys and ignores adds", got)
		}
		if !q.ShuttingDown() {
			t.Error("ShuttingDown = false")
		}
		q.ShutDown() // twice is fine
	})
}

func TestShutDownWithDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{})
		q.Add("a")
		q.Add("b")
		a, _, _ := q.Get()
		drained := make(chan error)
		go func() { drained <- q.ShutDownWithDrain(context.Background()) }()
		time.Sleep(time.Second)
		select {
		case err := <-drained:
			t.Fatalf("drain returned %v with a still in flight", err)
		default:
		}
		q.Done(a)
		if err := <-drained; err != nil {
			t.Fatalf("drain: %v", err)
		}
	})
}

func TestShutDownWithDrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{Name: "widgets"})
		q.Add("stuck")
		k, _, _ := q.Get()
		cause := errors.New("manager stopping")
		ctx, cancel := context.WithTimeoutCause(context.Background(), time.Second, cause)
		defer cancel()
		err := q.ShutDownWithDrain(ctx)
		if !errors.Is(err, cause) {
			t.Fatalf("err = %v, want one wrapping the context's cause", err)
		}
		if want := `drain queue "widgets": 1 keys still in flight (stuck among them): manager stopping`; err.Error() != want {
			t.Errorf("err = %q\nwant  %q", err, want)
		}
		q.Done(k)
	})
}

func TestConcurrentWorkersNeverShareAKey(t *testing.T) {
	q := newQueue(t, Options[int]{})
	const workers, keys, rounds = 8, 20, 200
	var mu sync.Mutex
	busy := map[int]bool{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				k, _, shutdown := q.Get()
				if shutdown {
					return
				}
				mu.Lock()
				if busy[k] {
					t.Errorf("key %d handed to two workers at once", k)
				}
				busy[k] = true
				mu.Unlock()
				q.Add(k) // re-add while processing
				mu.Lock()
				busy[k] = false
				mu.Unlock()
				q.Done(k)
			}
		})
	}
	for r := range rounds {
		for k := range keys {
			q.Add((k + r) % keys)
		}
	}
	if err := q.ShutDownWithDrain(t.Context()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}
