package dispatch

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/internal/sharding/membership"
)

// A member leaving gracefully releases its slots through the Dispatcher:
// the release must refuse the slots' keys from the moment it begins, and
// must not return (so the member keeps its Lease and claims, renewing)
// while a reconcile admitted before is in flight.
func TestReleaseWaitsForInFlight(t *testing.T) {
	ns := env.Namespace(t)
	var d *Dispatcher
	member, err := membership.New(env.Client(), membership.Options{
		Namespace: ns, Group: "release", Identity: "only", Slots: 4,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 200 * time.Millisecond,
		Handler: membership.HandlerFuncs{
			OnHeld:    func(s []int) { d.Held(s) },
			OnRelease: func(ctx context.Context, s []int) { d.Release(ctx, s) },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d, err = New(member, Options{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- member.Run(ctx) }()
	eventually(t, "the member to hold slot 2", func() bool { return member.MayDispatch(2) })

	// A reconcile of slot 2 is admitted and blocks (it never calls finish
	// until the test says so).
	if d.admit(2) != admitted {
		t.Fatal("admit(2) refuses while the member holds slot 2")
	}
	cancel() // leave: Release of every slot begins
	eventually(t, "the release to begin", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.releasing[2]
	})
	for s := range 4 {
		if d.admit(s) == admitted {
			t.Fatalf("admit(%d) admits after the release of slot %d began", s, s)
		}
	}
	// While the reconcile is in flight the member is still in its leave
	// loop: its Lease is renewed, again and again, and not deleted.
	leases := env.Client().CoordinationV1().Leases(ns)
	name := "release-only"
	first, err := leases.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Lease is gone while a reconcile of a released slot is in flight: %v", err)
	}
	rvs := map[string]bool{first.ResourceVersion: true}
	eventually(t, "two more renewals during the release", func() bool {
		l, err := leases.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the Lease is gone while a reconcile of a released slot is in flight: %v", err)
		}
		rvs[l.ResourceVersion] = true
		return len(rvs) >= 3
	})
	select {
	case err := <-done:
		t.Fatalf("Run returned (%v) while a reconcile of a released slot was in flight", err)
	default:
	}
	if d.admit(2) == admitted {
		t.Fatal("admit(2) admits during the release")
	}
	d.finish(2, d.start())
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Get(t.Context(), name, metav1.GetOptions{}); err == nil {
		t.Error("the Lease still exists after the member left")
	}
	if n := d.InFlight(); n != 0 {
		t.Errorf("InFlight() = %d after the reconcile returned, want 0", n)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With Options.Observe each admitted reconcile is timed on Options.Clock
// from admission until it returns, and heard of with its slot: the
// member's measure of each slot's load. Without it no clock is read.
func TestObserveTimesAdmittedReconciles(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	type heard struct {
		slot int
		took time.Duration
	}
	var got []heard
	d, err := New(MemberFunc(func(int) bool { return true }), Options{Clock: clk, Observe: func(slot int, took time.Duration) {
		got = append(got, heard{slot, took})
	}})
	if err != nil {
		t.Fatal(err)
	}
	if d.admit(3) != admitted {
		t.Fatal("slot 3 not admitted")
	}
	began := d.start()
	clk.Step(1500 * time.Millisecond)
	d.finish(3, began)
	if len(got) != 1 || got[0] != (heard{3, 1500 * time.Millisecond}) {
		t.Fatalf("heard %v, want slot 3 taking 1.5s", got)
	}
	plain, err := New(MemberFunc(func(int) bool { return true }), Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if b := plain.start(); !b.IsZero() {
		t.Errorf("without Observe start read the clock: %v", b)
	}
}
