package queue

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// spareGet calls GetSpare(0) in a goroutine and returns what it hands out,
// once it has.
func spareGet[K comparable](q *Queue[K]) <-chan K { return spareGetN(q, 0) }

// received returns what ch holds now, without waiting.
func received[K any](ch <-chan K) (k K, ok bool) {
	select {
	case k, ok = <-ch:
		return k, ok
	default:
		return k, false
	}
}

func TestGetSpareSkipsTenantsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{Tenant: tenantOf})
		q.Add("flood/1")
		q.Add("flood/2")
		q.Add("flood/3")
		q.Add("quiet/1")
		busy, _ := mustGet(t, q)
		if busy != "flood/1" {
			t.Fatalf("Get handed out %q, want flood/1", busy)
		}
		k, _, _ := q.GetSpare(0)
		if k != "quiet/1" {
			t.Fatalf("GetSpare handed out %q while flood/1 is in flight, want quiet/1", k)
		}
		// Only flood keys are ready and flood has a key in flight.
		got := spareGet(q)
		synctest.Wait()
		if k, ok := received(got); ok {
			t.Fatalf("GetSpare handed out %q while flood/1 is in flight", k)
		}
		q.Done(busy)
		synctest.Wait()
		if k, ok := received(got); !ok || k != "flood/2" {
			t.Fatalf("after flood/1 was done, GetSpare handed out %q (%v), want flood/2", k, ok)
		}
		// A spare's key counts as in flight for other spares too.
		got = spareGet(q)
		synctest.Wait()
		if k, ok := received(got); ok {
			t.Fatalf("GetSpare handed out %q while flood/2 is in flight with a spare", k)
		}
		q.Done("flood/2")
		synctest.Wait()
		if k, ok := received(got); !ok || k != "flood/3" {
			t.Fatalf("GetSpare handed out %q (%v), want flood/3", k, ok)
		}
		q.Done("flood/3")
		q.Done("quiet/1")
	})
}

// A parked GetSpare wakes for a key of a tenant with nothing in flight, and
// not for a key of one with a key in flight.
func TestGetSpareWakesForFreeTenantOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{Tenant: tenantOf})
		q.Add("flood/1")
		mustGet(t, q)
		got := spareGet(q)
		synctest.Wait()
		q.Add("flood/2")
		synctest.Wait()
		if k, ok := received(got); ok {
			t.Fatalf("GetSpare handed out %q while flood/1 is in flight", k)
		}
		q.AddAfter("quiet/1", time.Second)
		time.Sleep(time.Second)
		synctest.Wait()
		if k, ok := received(got); !ok || k != "quiet/1" {
			t.Fatalf("GetSpare handed out %q (%v), want quiet/1 once its delay ended", k, ok)
		}
	})
}

// GetSpare serves the highest priority first and, within it, tenants in
// turn; a tenant it serves out of turn goes to the back of the round.
func TestGetSparePriorityAndRounds(t *testing.T) {
	q := newQueue(t, Options[string]{Tenant: tenantOf})
	q.Add("flood/1")
	q.Add("flood/2")
	mustGet(t, q)
	q.AddWithOpts(AddOpts{Priority: LowPriority}, "low/1")
	q.Add("b/1")
	q.Add("b/2")
	q.Add("c/1")
	q.Add("d/1")
	var got []string
	for range 5 {
		k, _, _ := q.GetSpare(0)
		q.Done(k)
		got = append(got, k)
	}
	want := []string{"b/1", "c/1", "d/1", "b/2", "low/1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetSpare order (-want +got):\n%s", diff)
	}
	// flood kept its turn: Get serves it next.
	if k, _ := mustGet(t, q); k != "flood/2" {
		t.Errorf("Get after the spares handed out %q, want flood/2", k)
	}
}

// Without Options.Tenant every key has one tenant: GetSpare hands out a key
// only while none is in flight.
func TestGetSpareWithoutTenant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{})
		q.Add("a")
		q.Add("b")
		mustGet(t, q)
		got := spareGet(q)
		synctest.Wait()
		if k, ok := received(got); ok {
			t.Fatalf("GetSpare handed out %q while a is in flight", k)
		}
		q.Done("a")
		synctest.Wait()
		if k, ok := received(got); !ok || k != "b" {
			t.Fatalf("GetSpare handed out %q (%v), want b", k, ok)
		}
	})
}

// Keys in flight before the first GetSpare are counted: it turns counting
// on from the keys in flight then.
func TestGetSpareCountsKeysHandedOutBefore(t *testing.T) {
	q := newQueue(t, Options[string]{Tenant: tenantOf})
	q.Add("a/1")
	q.Add("a/2")
	q.Add("b/1")
	mustGet(t, q)
	if k, _, _ := q.GetSpare(0); k != "b/1" {
		t.Fatalf("GetSpare handed out %q while a/1 (got before counting began) is in flight, want b/1", k)
	}
	if err := q.checkInvariants(); err != nil {
		t.Fatal(err)
	}
}

// Shutdown ends a parked GetSpare, and ShutDownWithDrain waits for the keys
// GetSpare handed out.
func TestGetSpareShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{Tenant: tenantOf})
		q.Add("a/1")
		k, _, _ := q.GetSpare(0)
		parked := make(chan bool)
		go func() {
			_, _, shutdown := q.GetSpare(0)
			parked <- shutdown
		}()
		drained := make(chan error)
		go func() { drained <- q.ShutDownWithDrain(context.Background()) }()
		synctest.Wait()
		if shutdown := <-parked; !shutdown {
			t.Fatal("a parked GetSpare did not return shutdown")
		}
		select {
		case err := <-drained:
			t.Fatalf("ShutDownWithDrain returned %v while %q, from GetSpare, is in flight", err, k)
		default:
		}
		q.Done(k)
		if err := <-drained; err != nil {
			t.Fatalf("drain: %v", err)
		}
		if _, _, shutdown := q.GetSpare(0); !shutdown {
			t.Fatal("GetSpare after shutdown did not return shutdown")
		}
	})
}

// Aging: on every other GetSpare, the oldest key overdue by MaxWait goes
// first, whatever its priority, if its tenant has nothing in flight.
func TestGetSpareAges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{Tenant: tenantOf, MaxWait: time.Second})
		q.AddWithOpts(AddOpts{Priority: LowPriority}, "old/1")
		time.Sleep(2 * time.Second)
		q.AddWithOpts(AddOpts{Priority: 10}, "new/1")
		q.AddWithOpts(AddOpts{Priority: 10}, "new/2")
		var got []string
		for range 3 {
			k, _, _ := q.GetSpare(0)
			q.Done(k)
			got = append(got, k)
		}
		want := []string{"new/1", "old/1", "new/2"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GetSpare order (-want +got):\n%s", diff)
		}
	})
}

func TestGetSpareReAddWhileInFlight(t *testing.T) {
	q := newQueue(t, Options[string]{Tenant: tenantOf})
	q.Add("a/1")
	k, _, _ := q.GetSpare(0)
	q.Add(k) // while in flight: queued again at Done
	q.Add("a/2")
	q.Done(k)
	var got []string
	for range 2 {
		k, _, _ := q.GetSpare(0)
		q.Done(k)
		got = append(got, k)
	}
	if diff := cmp.Diff([]string{"a/2", "a/1"}, got); diff != "" {
		t.Errorf("GetSpare order (-want +got):\n%s", diff)
	}
	if err := q.checkInvariants(); err != nil {
		t.Fatal(err)
	}
}

// GetSpare(workers) hands out nothing while fewer than workers keys Get
// handed out are in flight, however free the ready keys' tenants, and wakes
// when Get makes every worker busy. Keys GetSpare handed out do not count.
func TestGetSpareWaitsForBusyWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{Tenant: tenantOf})
		q.Add("a/1")
		q.Add("b/1")
		q.Add("c/1")
		q.Add("d/1")
		got := make(chan string, 1)
		go func() {
			k, _, _ := q.GetSpare(2)
			got <- k
		}()
		synctest.Wait()
		if k, ok := received(got); ok {
			t.Fatalf("GetSpare(2) handed out %q while no worker was busy", k)
		}
		first, _ := mustGet(t, q)
		synctest.Wait()
		if k, ok := received(got); ok {
			t.Fatalf("GetSpare(2) handed out %q while one of two workers was busy", k)
		}
		second, _ := mustGet(t, q)
		synctest.Wait()
		k, ok := received(got)
		if !ok {
			t.Fatal("GetSpare(2) did not wake when both workers were busy")
		}
		if k == first || k == second {
			t.Fatalf("GetSpare(2) handed out %q, in flight already", k)
		}
		// A worker done: the spare's key does not make up for it.
		q.Done(first)
		spare := spareGetN(q, 2)
		synctest.Wait()
		if k, ok := received(spare); ok {
			t.Fatalf("GetSpare(2) handed out %q with one worker idle and one spare busy", k)
		}
		q.ShutDown()
	})
}

// spareGetN is spareGet for GetSpare(workers).
func spareGetN[K comparable](q *Queue[K], workers int) <-chan K {
	got := make(chan K, 1)
	go func() {
		k, _, shutdown := q.GetSpare(workers)
		if !shutdown {
			got <- k
		}
		close(got)
	}()
	return got
}
