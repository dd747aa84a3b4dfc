package membership_test

import (
	"fmt"
	"maps"
	"testing"
)

// Each member's Report rides in its Lease, and every member's View holds
// every live member's; View is Settled once the slots rest, and not while
// a member is still releasing slots a joiner was assigned.
func TestViewCarriesReportsAndSettles(t *testing.T) {
	ns := env.Namespace(t)
	var l ledger
	g := newGate()
	want := map[string]string{}
	var ms []*running
	for i := range 3 {
		id := fmt.Sprintf("m%d", i)
		want[id] = "load of " + id
		opts := patient
		opts.Report = func() string { return "load of " + id }
		ms = append(ms, start(t, clientset(t), ns, id, opts, l.handler(id, g.wait)))
	}
	eventually(t, "three members to cover the slots", func() bool { return covered(ms, 5, 6) })
	for _, m := range ms {
		eventually(t, m.Identity()+"'s view to hold every report and be settled", func() bool {
			v := m.View()
			return v.Settled && maps.Equal(v.Reports, want)
		})
	}
	g.arm(t)
	before := l.releases()
	d := start(t, clientset(t), ns, "z-joiner", patient, l.handler("z-joiner", nil))
	want["z-joiner"] = ""
	eventually(t, "a release to begin", func() bool { return l.releases() > before })
	for _, m := range append(ms, d) {
		rounds(t, m, 2)
		if v := m.View(); v.Settled {
			t.Errorf("%s's view is settled while releases are blocked: %+v", m.Identity(), v)
		}
	}
	g.open()
	ms = append(ms, d)
	eventually(t, "four members to cover the slots", func() bool { return covered(ms, 4, 4) })
	for _, m := range ms {
		eventually(t, m.Identity()+"'s view to settle with four reports", func() bool {
			v := m.View()
			return v.Settled && maps.Equal(v.Reports, want)
		})
	}
	checkOverlap(t, &l)
}
