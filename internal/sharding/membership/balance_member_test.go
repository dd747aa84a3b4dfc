package membership_test

import (
	"slices"
	"testing"
	"time"
)

// With LoadHalfLife, members balance the slots by the load they measure:
// two members start holding 8 slots each; the first one's slots then do
// ten times the work of the second's, and the members swap slots until
// each holds four of the heavy ones (8 slots each still), without a slot
// held by two at once, and then stop moving.
func TestMembersBalanceByLoad(t *testing.T) {
	ns := env.Namespace(t)
	var l ledger
	opts := patient
	opts.LoadHalfLife = time.Minute // steady enough through the test
	ms := startN(t, ns, 2, opts, &l)
	settle(t, ms, 8, 8)
	heavy := ms[0].Held()
	for _, s := range heavy {
		ms[0].ObserveLoad(s, 10*time.Second)
	}
	for _, s := range ms[1].Held() {
		ms[1].ObserveLoad(s, time.Second)
	}
	evened := func() bool {
		for _, m := range ms {
			n := 0
			for _, s := range m.Held() {
				if slices.Contains(heavy, s) {
					n++
				}
			}
			if n != 4 {
				return false
			}
		}
		return covered(ms, 8, 8)
	}
	eventually(t, "each member to hold four of the heavy slots", evened)
	moves := l.releases()
	for _, m := range ms {
		rounds(t, m, 5)
	}
	if !evened() || l.releases() != moves {
		t.Errorf("the slots moved on after balancing: %d releases, then %d", moves, l.releases())
	}
	// Four swaps, 8 moves, suffice. The members' loads reach each other
	// one renewal apart, and a target that changes while slots are in
	// flight costs more: at most twice as many.
	t.Logf("%d slots moved", moves)
	if moves < 8 || moves > 16 {
		t.Errorf("%d slots moved, want 8 to 16: four swaps, and at most as many again while the loads reach the members", moves)
	}
	checkOverlap(t, &l)
}
