package queue

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func tenantOf(k string) string { return strings.SplitN(k, "/", 2)[0] }

func TestFairnessRoundRobin(t *testing.T) {
	q := newQueue(t, Options[string]{Tenant: tenantOf})
	for i := range 5 {
		q.Add(fmt.Sprintf("big/%d", i))
	}
	q.Add("small/0")
	q.Add("other/0")
	q.Add("other/1")
	want := []string{"big/0", "small/0", "other/0", "big/1", "other/1", "big/2", "big/3", "big/4"}
	if diff := cmp.Diff(want, drain(t, q)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// One tenant with 100,000 queued keys delays another tenant's single key by at
// most one key per other tenant.
func TestFairnessBoundUnderBacklog(t *testing.T) {
	q := newQueue(t, Options[string]{Tenant: tenantOf})
	for i := range 100_000 {
		q.Add(fmt.Sprintf("noisy/%d", i))
	}
	// Let the backlog start draining, so the late tenants arrive mid-turn.
	for range 17 {
		k, _ := mustGet(t, q)
		q.Done(k)
	}
	q.Add("quiet-a/x")
	q.Add("quiet-b/x")
	q.Add("quiet-c/x")
	var before int
	seen := map[string]int{}
	for len(seen) < 3 {
		k, _ := mustGet(t, q)
		q.Done(k)
		if strings.HasPrefix(k, "quiet") {
			seen[k] = before
		} else {
			before++
		}
	}
	// Three other tenants: each quiet key waits behind at most one noisy key
	// per tenant, so at most one noisy key in all goes first.
	for k, n := range seen {
		if n > 1 {
			t.Errorf("%s waited behind %d noisy keys, want at most 1", k, n)
		}
	}
}

func TestFairnessWithinPriority(t *testing.T) {
	q := newQueue(t, Options[string]{Tenant: tenantOf})
	q.AddWithOpts(AddOpts{Priority: LowPriority}, "a/low", "b/low")
	q.Add("a/1")
	q.Add("a/2")
	q.Add("b/1")
	want := []string{"a/1", "b/1", "a/2", "a/low", "b/low"}
	if diff := cmp.Diff(want, drain(t, q)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// Under a saturating stream of higher-priority work, a low-priority key is
// handed out within two Gets of having been ready for MaxWait and MaxWait/16
// (the stamp's precision), and not before MaxWait. The queue may have been
// idle for long before, so that its stamp had stopped ticking.
func TestAgingBound(t *testing.T) {
	for _, fair := range []bool{false, true} {
		for _, idleFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("fair=%v/idleFirst=%v", fair, idleFirst), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { testAgingBound(t, fair, idleFirst) })
			})
		}
	}
}

func testAgingBound(t *testing.T, fair, idleFirst bool) {
	opts := Options[string]{MaxWait: 30 * time.Second}
	if fair {
		opts.Tenant = tenantOf
	}
	q := newQueue(t, opts)
	if idleFirst {
		q.Add("fg/first")
		k, _ := mustGet(t, q)
		q.Done(k)
		time.Sleep(time.Hour)
		synctest.Wait()
		q.mu.Lock()
		ticking := q.ticking
		q.mu.Unlock()
		if ticking {
			t.Fatal("the stamp still ticks an hour after the queue emptied")
		}
	}
	q.AddWithOpts(AddOpts{Priority: LowPriority}, "bg/starving")
	start := time.Now()
	deadline := opts.MaxWait + opts.MaxWait/16
	next := 0
	getsAfterDeadline := 0
	for {
		// Keep two high-priority keys always ready.
		for q.Len() < 3 {
			q.AddWithOpts(AddOpts{Priority: 10}, fmt.Sprintf("fg/%d", next))
			next++
		}
		k, _ := mustGet(t, q)
		q.Done(k)
		if time.Since(start) >= deadline {
			getsAfterDeadline++
		}
		if k == "bg/starving" {
			break
		}
		if getsAfterDeadline > 2 {
			t.Fatalf("low-priority key not handed out within 2 Gets of %v (%d Gets after it)", deadline, getsAfterDeadline)
		}
		time.Sleep(100 * time.Millisecond) // the work
	}
	if waited := time.Since(start); waited < opts.MaxWait {
		t.Errorf("low-priority key handed out after %v, before MaxWait: priorities not honoured", waited)
	}
}

// Aging interleaves: once an old backlog is overdue, new high-priority work
// still gets every other Get instead of waiting for the whole backlog.
func TestAgingInterleavesWithFreshWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{MaxWait: time.Second})
		for i := range 10 {
			q.AddWithOpts(AddOpts{Priority: LowPriority}, fmt.Sprintf("old/%d", i))
		}
		time.Sleep(2 * time.Second)
		q.Add("new/0")
		q.Add("new/1")
		q.Add("new/2")
		got := drain(t, q)[:6]
		want := []string{"new/0", "old/0", "new/1", "old/1", "new/2", "old/2"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
	})
}

func TestAgingOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{MaxWait: -1})
		q.AddWithOpts(AddOpts{Priority: LowPriority}, "low")
		time.Sleep(time.Hour)
		q.Add("a")
		q.Add("b")
		if diff := cmp.Diff([]string{"a", "b", "low"}, drain(t, q)); diff != "" {
			t.Errorf("strict priorities (-want +got):\n%s", diff)
		}
	})
}

// Tenants that come and go do not pile up: idle ones are swept once there
// are more than maxIdleTenants.
func TestIdleTenantsSwept(t *testing.T) {
	q := newQueue(t, Options[string]{Tenant: tenantOf})
	swept := 0
	for i := range 3 * maxIdleTenants {
		q.Add(fmt.Sprintf("ns-%d/x", i))
		if b := q.ready.buckets[0]; len(b.tenants) < i {
			// Swept just now: no tenant swept out may stay in the bucket's
			// cache of recent tenants.
			swept++
			if err := q.checkInvariants(); err != nil {
				t.Fatalf("after a sweep: %v", err)
			}
		}
		k, _ := mustGet(t, q)
		q.Done(k)
	}
	if swept == 0 {
		t.Fatal("no sweep happened")
	}
	b := q.ready.buckets[0]
	if n := len(b.tenants); n > maxIdleTenants+1 {
		t.Errorf("bucket holds %d tenants, want at most %d", n, maxIdleTenants+1)
	}
	if err := q.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	// Tenants swept out come back as new ones, not through a stale entry of
	// the bucket's cache of recent tenants.
	for i := range 3 * maxIdleTenants {
		q.Add(fmt.Sprintf("ns-%d/y", i))
	}
	if err := q.checkInvariants(); err != nil {
		t.Fatal(err)
	}
}
