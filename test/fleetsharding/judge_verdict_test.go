package fleetsharding

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The verdict finds what it must: the scenario's result rests on it.
func TestJudge(t *testing.T) {
	const a, b, c = 1, 2, 3
	w := func(at int64, ns string, pid int) act {
		return act{Kind: "write", At: at, What: "PUT /api/v1/namespaces/" + ns + "/configmaps/copy", PID: pid}
	}
	acts := []act{
		{Kind: "own", At: 1, What: "x", PID: a}, {Kind: "own", At: 1, What: "y", PID: b},
		{Kind: "start", At: 2, What: "x/x/source", PID: a}, w(3, "x", a), {Kind: "end", At: 4, What: "x/x/source", PID: a},
		{Kind: "start", At: 5, What: "y/y/source", PID: a}, {Kind: "end", At: 6, What: "y/y/source", PID: a}, // a starts b's member
		w(7, "y", a), // and writes it
		{Kind: "start", At: 8, What: "x/x/source", PID: a},               // a is killed at 9 in flight
		{Kind: "own", At: 10, What: "x", PID: c},                         // c takes x after the kill: no straddle
		{Kind: "start", At: 11, What: "y/y/source", PID: b},              // b is frozen at 12 in flight, thawed at 20
		{Kind: "own", At: 15, What: "y", PID: c},                         // c takes y while b is frozen: no straddle
		w(21, "y", b), {Kind: "end", At: 22, What: "y/y/source", PID: b}, // b writes after the thaw
		{Kind: "start", At: 23, What: "x/x/source", PID: c}, // c reconciles x...
		{Kind: "own", At: 24, What: "x", PID: b},            // ...while b takes it
		{Kind: "end", At: 25, What: "x/x/source", PID: c},
	}
	got := judge(acts, map[int]int64{a: 9}, freeze{pid: b, frozeAt: 12, thawAt: 20})
	want := verdict{starts: 5, writes: 3, nonOwnerStarts: 1, nonOwnerWrites: 2, straddles: 1}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(verdict{}), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".examples" }, cmp.Ignore())); diff != "" {
		t.Errorf("judge (-want +got):\n%s\nexamples: %q", diff, got.examples)
	}
	if len(got.examples) != got.bad() {
		t.Errorf("%d examples for %d findings: %q", len(got.examples), got.bad(), got.examples)
	}

	n, owned, reconciled, ok := takeover(acts, b, 12)
	if n != 1 || ok {
		t.Errorf("takeover of b's members at 12 = %d, %d, %d, %t; want 1 member, not reconciled by another since", n, owned, reconciled, ok)
	}
	if n, owned, reconciled, ok := takeover(acts, a, 9); n != 1 || owned != 10 || reconciled != 23 || !ok {
		t.Errorf("takeover of a's members at 9 = %d, %d, %d, %t; want 1 member owned at 10, reconciled at 23", n, owned, reconciled, ok)
	}
}
