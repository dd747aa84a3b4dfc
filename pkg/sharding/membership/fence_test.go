package membership_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
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

// tick waits for the member's loop to wait on clk, then steps clk by d.
func tick(t *testing.T, clk *clocktesting.FakeClock, d time.Duration) {
	t.Helper()
	eventually(t, "the member to wait for its next round", clk.HasWaiters)
	clk.Step(d)
}

// MayDispatch turns false the instant the last successful renewal is
// RenewDeadline old, while renewals fail, without waiting for a round.
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
