package queue

import (
	"fmt"
	"testing"
	"time"
)

// A node remembers its line between turns in the ready set. When that line's
// bucket has been dropped as empty in the meantime, the node must join the
// bucket that replaces it, not the dropped one, where Get would never find
// it.
func TestNodeRejoinsAfterItsBucketWasDropped(t *testing.T) {
	q := newQueue(t, Options[string]{Tenant: tenantOf})
	q.AddWithOpts(AddOpts{Priority: 1}, "ns/in-flight")
	if k, _ := mustGet(t, q); k != "ns/in-flight" {
		t.Fatalf("got %q", k)
	}
	q.AddWithOpts(AddOpts{Priority: 1, After: time.Hour}, "ns/waiting")
	// More priorities than maxEmptyBuckets, each emptied at once, make the
	// ready set drop the empty bucket of priority 1.
	for p := range 2 * maxEmptyBuckets {
		q.AddWithOpts(AddOpts{Priority: 100 + p}, fmt.Sprintf("ns/p%d", p))
		k, _ := mustGet(t, q)
		q.Done(k)
	}
	for _, b := range q.ready.buckets {
		if b.priority == 1 {
			t.Fatal("the bucket of priority 1 was not dropped; the test needs more priorities")
		}
	}
	q.AddWithOpts(AddOpts{Priority: 1}, "ns/in-flight") // while processing
	q.Done("ns/in-flight")
	q.AddWithOpts(AddOpts{Priority: 1}, "ns/waiting") // ready now
	if err := q.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for range 2 {
		k, p := mustGet(t, q)
		if p != 1 {
			t.Errorf("%q handed out at priority %d, want 1", k, p)
		}
		got[k] = true
	}
	if !got["ns/in-flight"] || !got["ns/waiting"] {
		t.Errorf("handed out %v, want both keys", got)
	}
}

// Likewise when the node's tenant has been swept out as idle.
func TestNodeRejoinsAfterItsTenantWasSwept(t *testing.T) {
	q := newQueue(t, Options[string]{Tenant: tenantOf})
	q.AddAfter("kept/waiting", time.Hour)
	q.Add("kept/in-flight")
	if k, _ := mustGet(t, q); k != "kept/in-flight" {
		t.Fatalf("got %q", k)
	}
	// Tenants that come and go sweep the idle ones, "kept" among them.
	for i := range 3 * maxIdleTenants {
		q.Add(fmt.Sprintf("ns-%d/x", i))
		k, _ := mustGet(t, q)
		q.Done(k)
	}
	if _, ok := q.ready.buckets[0].tenants["kept"]; ok {
		t.Fatal("tenant kept was not swept; the test needs more tenants")
	}
	q.Add("kept/in-flight") // while processing
	q.Done("kept/in-flight")
	q.Add("kept/waiting") // ready now
	if err := q.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	got := drain(t, q)
	if len(got) != 2 {
		t.Errorf("handed out %v, want both keys of tenant kept", got)
	}
}
