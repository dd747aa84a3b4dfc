package membership_test

import (
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/internal/sharding/membership"
)

// startN starts members m0..m(n-1) of ns with timing, recording into l.
func startN(t *testing.T, ns string, n int, timing membership.Options, l *ledger) []*running {
	var ms []*running
	for i := range n {
		id := fmt.Sprintf("m%d", i)
		ms = append(ms, start(t, clientset(t), ns, id, timing, l.handler(id, nil)))
	}
	return ms
}

func checkOverlap(t *testing.T, l *ledger) {
	t.Helper()
	if o := l.overlap(); o != "" {
		t.Error(o)
	}
}

// Three members converge to a disjoint cover of all slots, each holding
// 16/3 of them.
func TestMembersCoverAllSlots(t *testing.T) {
	ns := env.Namespace(t)
	var l ledger
	ms := startN(t, ns, 3, patient, &l)
	eventually(t, "three members to cover the slots", func() bool { return covered(ms, 5, 6) })
	for _, m := range ms {
		if got := m.Stats().Members; got != 3 {
			t.Errorf("%s sees %d members, want 3", m.Identity(), got)
		}
	}
	checkOverlap(t, &l)
}

// A fourth member joining takes a quarter of the slots, which move
// without any slot held by two members at once: while the old holders'
// Release hooks block (reconciles in flight), the joiner holds none of
// the slots being released. The Leases cannot expire during the test, so
// slots move only by release and claim. The joiner's identity sorts
// before and after the others', since ties go to the lower identity.
func TestJoinMovesSlotsWithoutOverlap(t *testing.T) {
	for _, joiner := range []string{"a-joiner", "z-joiner"} {
		t.Run(joiner, func(t *testing.T) { testJoin(t, joiner) })
	}
}

func testJoin(t *testing.T, joiner string) {
	ns := env.Namespace(t)
	var l ledger
	g := newGate()
	var ms []*running
	for i := range 3 {
		id := fmt.Sprintf("m%d", i)
		ms = append(ms, start(t, clientset(t), ns, id, patient, l.handler(id, g.wait)))
	}
	settle(t, ms, 5, 6)
	g.arm(t) // the join's releases block, not the start's
	before := l.releases()
	d := start(t, clientset(t), ns, joiner, patient, l.handler(joiner, nil))
	eventually(t, "a release to begin", func() bool { return l.releases() > before })
	rounds(t, d, 3)
	if h := d.Held(); len(h) > 0 {
		t.Errorf("the joiner holds %v while the old holders are still releasing", h)
	}
	checkOverlap(t, &l)
	g.open()
	ms = append(ms, d)
	eventually(t, "four members to cover the slots", func() bool { return covered(ms, 4, 4) })
	checkOverlap(t, &l)
	if st := d.Stats(); st.Handovers != 4 || st.LastTakeover <= 0 || st.Members != 4 {
		t.Errorf("the joiner's Stats = %+v, want 4 members, 4 handovers and a takeover duration", st)
	}
	// Only the joiner's share moved: ⌈16/4⌉ slots, and none among the
	// old members (issue 52's bound is one more).
	if n := l.releases() - before; n > slots/4+1 {
		t.Errorf("the join moved %d slots, want at most %d", n, slots/4+1)
	}
}

// settle waits until ms cover the slots, each holding lo to hi of them,
// and still do after three rounds of each: the slots have come to rest
// (a cover can be a move's midpoint).
func settle(t *testing.T, ms []*running, lo, hi int) {
	t.Helper()
	eventually(t, "the members to cover the slots", func() bool { return covered(ms, lo, hi) })
	for _, m := range ms {
		rounds(t, m, 3)
	}
	eventually(t, "the members to cover the slots at rest", func() bool { return covered(ms, lo, hi) })
}

// rounds waits for m to renew n times.
func rounds(t *testing.T, m *running, n int) {
	t.Helper()
	for range n {
		before := m.Stats().LastRenewal
		eventually(t, m.Identity()+" to renew", func() bool { return m.Stats().LastRenewal.After(before) })
	}
}

// A member leaving stops dispatching, waits for its Release hook, and
// only then do the others take its slots: at once, since its Lease is
// deleted (the Leases cannot expire during the test).
func TestGracefulLeaveHandsOver(t *testing.T) {
	ns := env.Namespace(t)
	var l ledger
	g := newGate()
	ms := []*running{
		start(t, clientset(t), ns, "m0", patient, l.handler("m0", nil)),
		start(t, clientset(t), ns, "m1", patient, l.handler("m1", nil)),
		start(t, clientset(t), ns, "m2", patient, l.handler("m2", g.wait)),
	}
	settle(t, ms, 5, 6)
	g.arm(t) // the leave's releases block, not the start's
	before := l.releases()
	leaving := ms[2].Held()
	stopped := make(chan error, 1)
	go func() { stopped <- ms[2].stop() }()
	eventually(t, "m2 to stop dispatching", func() bool { return len(ms[2].Held()) == 0 })

	// While m2's Release hook blocks, the others complete two rounds and
	// still hold none of its slots.
	for _, m := range ms[:2] {
		rounds(t, m, 2)
		for _, s := range leaving {
			if m.MayDispatch(s) {
				t.Errorf("%s dispatches slot %d while m2 is still releasing it", m.Identity(), s)
			}
		}
	}
	g.open()
	if err := <-stopped; err != nil {
		t.Errorf("Run = %v after a graceful leave", err)
	}
	eventually(t, "two members to cover the slots", func() bool { return covered(ms[:2], 8, 8) })
	if n := l.releases() - before; n != len(leaving) {
		t.Errorf("the leave moved %d slots, want only m2's %d", n, len(leaving))
	}
	_, err := env.Client().CoordinationV1().Leases(ns).Get(t.Context(), membership.DefaultGroup+"-m2", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("m2's Lease after leaving: %v, want NotFound", err)
	}
	checkOverlap(t, &l)
}

// A member whose renewals fail stops dispatching on its own before its
// Lease expires; the others take its slots only after it expired on their
// clocks; once its renewals succeed again it rejoins.
func TestFailingRenewalsFence(t *testing.T) {
	ns := env.Namespace(t)
	var l ledger
	bcs, b := breakable(t)
	ms := []*running{
		start(t, clientset(t), ns, "m0", fast, l.handler("m0", nil)),
		start(t, bcs, ns, "m1", fast, l.handler("m1", nil)),
		start(t, clientset(t), ns, "m2", fast, l.handler("m2", nil)),
	}
	eventually(t, "three members to cover the slots", func() bool { return covered(ms, 5, 6) })
	fenced := ms[1].Held()
	sampler := sample(ms[1].Member, fenced)
	broke := time.Now()
	b.broken.Store(true)
	eventually(t, "m1 to stop dispatching", func() bool { return len(ms[1].Held()) == 0 })
	stoppedAt := sampler()
	if stoppedAt.IsZero() {
		t.Fatal("m1 was never seen dispatching its slots")
	}
	last := ms[1].Stats().LastRenewal
	others := []*running{ms[0], ms[2]}
	eventually(t, "m0 and m2 to cover the slots", func() bool { return covered(others, 8, 8) })
	for _, s := range fenced {
		var took time.Time
		for _, m := range others {
			if at := l.firstHeld(m.Identity(), s, broke); !at.IsZero() {
				took = at
			}
		}
		if !stoppedAt.Before(took) {
			t.Errorf("slot %d was taken at %v, before m1 last allowed dispatch at %v", s, took.Format(time.StampMicro), stoppedAt.Format(time.StampMicro))
		}
		if took.Before(last.Add(fast.LeaseDuration)) {
			t.Errorf("slot %d was taken at %v, before m1's Lease expired at %v", s, took.Format(time.StampMicro), last.Add(fast.LeaseDuration).Format(time.StampMicro))
		}
	}
	b.broken.Store(false)
	eventually(t, "m1 to rejoin", func() bool { return covered(ms, 5, 6) })
	checkOverlap(t, &l)
}

// sample polls m.MayDispatch for slots until the returned function is
// called, which returns the last instant any of them was dispatchable. A
// slow poller samples less often, so that instant is never later than the
// truth.
func sample(m *membership.Member, slots []int) func() time.Time {
	var last time.Time
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			for _, s := range slots {
				if m.MayDispatch(s) {
					last = time.Now()
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() time.Time {
		close(stop)
		<-done
		return last
	}
}
