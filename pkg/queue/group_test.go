package queue

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// groupOf is the group of a tenant "group.tenant".
func groupOf(tenant string) string { return strings.SplitN(tenant, ".", 2)[0] }

// With groups, a group with many busy tenants gets one turn, as a group
// with one does, and its tenants take its turns round-robin.
func TestGroupsRoundRobin(t *testing.T) {
	q := newQueue(t, Options[string]{Tenant: tenantOf, TenantGroup: groupOf})
	for i := range 3 {
		for _, tenant := range []string{"big.a", "big.b", "big.c"} {
			q.Add(fmt.Sprintf("%s/%d", tenant, i))
		}
	}
	q.Add("small.a/0")
	q.Add("small.a/1")
	q.Add("small.a/2")
	want := []string{
		"big.a/0", "small.a/0", "big.b/0", "small.a/1", "big.c/0", "small.a/2",
		"big.a/1", "big.b/1", "big.c/1", "big.a/2", "big.b/2", "big.c/2",
	}
	if diff := cmp.Diff(want, drain(t, q)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// Without groups, the same keys give every tenant a turn: the group of
// three tenants takes three turns to the other's one.
func TestWithoutGroupsEveryTenantATurn(t *testing.T) {
	q := newQueue(t, Options[string]{Tenant: tenantOf})
	for _, tenant := range []string{"big.a", "big.b", "big.c", "small.a"} {
		q.Add(tenant + "/0")
		q.Add(tenant + "/1")
	}
	want := []string{"big.a/0", "big.b/0", "big.c/0", "small.a/0", "big.a/1", "big.b/1", "big.c/1", "small.a/1"}
	if diff := cmp.Diff(want, drain(t, q)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// A group flooding through a thousand tenants delays another group's key
// by at most one key: the bound of one-level fairness, across groups.
func TestGroupsBoundUnderBacklog(t *testing.T) {
	q := newQueue(t, Options[string]{Tenant: tenantOf, TenantGroup: groupOf})
	for i := range 100_000 {
		q.Add(fmt.Sprintf("noisy.%d/%d", i%1000, i))
	}
	for range 17 {
		k, _ := mustGet(t, q)
		q.Done(k)
	}
	q.Add("quiet.a/x")
	before := 0
	for {
		k, _ := mustGet(t, q)
		q.Done(k)
		if k == "quiet.a/x" {
			break
		}
		before++
	}
	if before > 1 {
		t.Errorf("the quiet group's key waited behind %d keys of the noisy group's thousand tenants, want at most 1", before)
	}
}

// GetSpare, with groups, hands out the key of the first tenant in turn with
// nothing in flight, across groups.
func TestGroupsSpare(t *testing.T) {
	q := newQueue(t, Options[string]{Tenant: tenantOf, TenantGroup: groupOf})
	q.Add("a.x/0")
	q.Add("a.x/1")
	q.Add("a.y/0")
	q.Add("b.x/0")
	k, _ := mustGet(t, q) // a.x/0 in flight
	if k != "a.x/0" {
		t.Fatalf("first Get: %s, want a.x/0", k)
	}
	var spares []string
	for range 2 {
		k, _, shutdown := q.GetSpare(1)
		if shutdown {
			t.Fatal("GetSpare: shut down")
		}
		spares = append(spares, k)
	}
	// a.x has a key in flight; b.x is the group served next, then a.y.
	if diff := cmp.Diff([]string{"b.x/0", "a.y/0"}, spares); diff != "" {
		t.Errorf("spare keys (-want +got):\n%s", diff)
	}
	if err := q.checkInvariants(); err != nil {
		t.Error(err)
	}
}
