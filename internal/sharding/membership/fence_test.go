package membership_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/internal/sharding/membership"
)

// solo runs one member on a fake clock and steps it round by round until
// it holds every slot.
func solo(t *testing.T, l *ledger) (*running, *clocktesting.FakeClock, *breaker) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Now())
	cs, b := breakable(t)
	opts := fast
	opts.Clock = clk
	m := start(t, cs, env.Namespace(t), "solo", opts, l.handler("solo", nil))
	for len(m.Held()) < slots {
		tick(t, clk, fast.RetryPeriod)
	}
	return m, clk, b
}

// tick waits for the member's loop to wait on clk, steps clk by d, and
// waits for the round that starts to end (the loop waits on clk again).
func tick(t *testing.T, clk *clocktesting.FakeClock, d time.Duration) {
	t.Helper()
	eventually(t, "the member to wait for its next round", clk.HasWaiters)
	clk.Step(d)
	eventually(t, "the member to end its round", clk.HasWaiters)
}

// MayDispatch turns false the instant the last successful renewal is
// RenewDeadline old, while renewals fail, without waiting for a round;
// Holds stays true.
func TestMayDispatchEndsAtRenewDeadline(t *testing.T) {
	var l ledger
	m, clk, b := solo(t, &l)
	last := m.Stats().LastRenewal
	b.broken.Store(true)
	tick(t, clk, last.Add(fast.RenewDeadline-time.Nanosecond).Sub(clk.Now()))
	if !m.MayDispatch(0) {
		t.Fatal("MayDispatch(0) = false 1ns before the renew deadline")
	}
	clk.Step(time.Nanosecond)
	if m.MayDispatch(0) {
		t.Error("MayDispatch(0) = true at the renew deadline after renewals failed")
	}
	// Fenced, not released: the slot is still this member's until a
	// round releases it, and a renewal may yet open the fence again.
	if !m.Holds(0) {
		t.Error("Holds(0) = false at the renew deadline, before any round released it")
	}
	if m.MayDispatch(-1) || m.MayDispatch(slots) {
		t.Error("MayDispatch is true for a slot outside 0..Slots-1")
	}
}

// A member that sees a gap beyond the renew deadline between two rounds
// (as a process frozen by SIGSTOP does), though its next renewal succeeds,
// releases every slot and rejoins as a newcomer.
func TestRenewalGapFencesAndRejoins(t *testing.T) {
	var l ledger
	m, clk, _ := solo(t, &l)
	frozen := time.Now()
	tick(t, clk, fast.RenewDeadline+fast.RetryPeriod)
	for len(m.Held()) < slots {
		tick(t, clk, fast.RetryPeriod)
	}
	if at := l.firstHeld("solo", 0, frozen); at.IsZero() {
		t.Fatal("slot 0 was not held anew after the gap")
	}
	var seq []kind
	l.mu.Lock()
	for _, e := range l.events {
		if e.slot == 0 {
			seq = append(seq, e.kind)
		}
	}
	l.mu.Unlock()
	if diff := cmp.Diff([]kind{held, releasing, released, held}, seq); diff != "" {
		t.Errorf("slot 0's events (-want +got):\n%s", diff)
	}
}

// A member takes the slots of a member that stopped renewing only after
// its Lease has not changed for LeaseDuration on the taker's clock, and
// deletes that Lease after twice LeaseDuration.
func TestDeadMemberExpiresOnObserverClock(t *testing.T) {
	ns := env.Namespace(t)
	ghost := "ghost"
	// A Lease a crashed member left, renewed "far in the future" by its
	// own clock: renewTime is never read.
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: membership.DefaultGroup + "-" + ghost, Namespace: ns,
			Labels:      map[string]string{membership.LabelGroup: membership.DefaultGroup},
			Annotations: map[string]string{membership.AnnotationClaims: "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &ghost, RenewTime: &metav1.MicroTime{Time: time.Now().Add(time.Hour)}},
	}
	if _, err := env.Client().CoordinationV1().Leases(ns).Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var l ledger
	clk := clocktesting.NewFakeClock(time.Now())
	opts := fast
	opts.Clock = clk
	firstSeen := clk.Now() // the first round lists at once
	m := start(t, clientset(t), ns, "solo", opts, l.handler("solo", nil))
	for clk.Now().Before(firstSeen.Add(fast.LeaseDuration)) {
		if h := m.Held(); len(h) > 0 {
			t.Fatalf("holds %v at %v after first seeing the dead member's claims, before LeaseDuration %v", h, clk.Since(firstSeen), fast.LeaseDuration)
		}
		tick(t, clk, fast.RetryPeriod)
	}
	for len(m.Held()) < slots {
		tick(t, clk, fast.RetryPeriod)
	}
	for {
		_, err := env.Client().CoordinationV1().Leases(ns).Get(t.Context(), lease.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if clk.Since(firstSeen) > 3*fast.LeaseDuration {
			t.Fatalf("the dead member's Lease is still there %v after it was first seen: %v", clk.Since(firstSeen), err)
		}
		tick(t, clk, fast.RetryPeriod)
	}
	if since := clk.Since(firstSeen); since < 2*fast.LeaseDuration {
		t.Errorf("the dead member's Lease was deleted %v after it was first seen, before twice LeaseDuration", since)
	}
}
