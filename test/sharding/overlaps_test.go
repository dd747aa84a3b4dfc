package sharding

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The overlap check finds what it must: the churn test's verdict rests on
// it.
func TestOverlaps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records")
	lines := "start 10 ns/a 1\nstart 15 ns/b 2\nend 20 ns/a 1\n" + // a: pid 1 [10,20]
		"start 20 ns/a 2\nend 30 ns/a 2\n" + // a: pid 2 starts as pid 1 ends: no overlap
		"start 25 ns/b 1\nend 26 ns/b 1\n" + // b: pid 1 inside pid 2's open [15, killed at 40]
		"start 31 ns/a 2\nend 32 ns/a 2\n" + // a: pid 2 again: one process never overlaps itself
		"write 12 PATCH /api/v1/namespaces/x/configmaps/a 1\nwrite 27 DELETE /api/v1/namespaces/x/configmaps/b 2\n" // writes are no reconciles
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	all, err := readIntervals(path, map[int]int64{2: 40})
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]interval{{{"ns/b", 2, 15, 40}, {"ns/b", 1, 25, 26}}}
	if diff := cmp.Diff(want, overlaps(all), cmp.AllowUnexported(interval{})); diff != "" {
		t.Errorf("overlaps (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"end 1 ns/a 1\n", "write 1 PATCH 1\n", "start 1 ns/a\n", "stop 1 ns/a 1\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readIntervals(path, nil); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// The frozen leader test's verdict finds what it must: the old leader's
// starts and writes after the new one's first act, and the new one's
// before the old one's last act before the freeze; ends count for
// neither.
func TestJudgeFrozenLeader(t *testing.T) {
	const a, b, frozeAt = 1, 2, 100
	acts := []act{
		{Kind: "start", At: 10, What: "ns/x", PID: a}, {Kind: "write", At: 20, What: "PATCH /p", PID: a}, {Kind: "end", At: 30, What: "ns/x", PID: a},
		{Kind: "start", At: 90, What: "ns/y", PID: a}, // in flight at the freeze
		{Kind: "start", At: 150, What: "ns/x", PID: b}, {Kind: "write", At: 160, What: "PATCH /p", PID: b}, {Kind: "end", At: 170, What: "ns/x", PID: b},
		{Kind: "write", At: 200, What: "PATCH /q", PID: a}, {Kind: "end", At: 210, What: "ns/y", PID: a}, {Kind: "start", At: 220, What: "ns/z", PID: a}, // a wakes and acts
	}
	got, err := judge(acts, a, b, frozeAt)
	if err != nil {
		t.Fatal(err)
	}
	want := freezeResult{aStarts: 1, aWrites: 1, aFirst: 200, aLast: 220, bFirst: 150, aBefore: 90,
		examples: []act{{Kind: "write", At: 200, What: "PATCH /q", PID: a}, {Kind: "start", At: 220, What: "ns/z", PID: a}}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(freezeResult{}, act{})); diff != "" {
		t.Errorf("judge (-want +got):\n%s", diff)
	}
	if got.overlaps() != 2 || got.acting() != 20 {
		t.Errorf("%d overlaps acting for %v, want 2 for 20ns", got.overlaps(), got.acting())
	}

	// b acting before a's last act before the freeze: an overlap seen
	// from both sides.
	acts = []act{{Kind: "start", At: 10, What: "ns/x", PID: a}, {Kind: "write", At: 20, What: "PATCH /p", PID: b}, {Kind: "write", At: 30, What: "PATCH /p", PID: a}, {Kind: "start", At: 150, What: "ns/x", PID: b}}
	if got, err := judge(acts, a, b, frozeAt); err != nil || got.bEarly != 1 || got.aWrites != 1 || got.aStarts != 0 {
		t.Errorf("judge = %+v, %v; want b early once, a late once", got, err)
	}
	for _, acts := range [][]act{
		{{Kind: "start", At: 150, What: "ns/x", PID: b}},                                                 // a never acted
		{{Kind: "start", At: 10, What: "ns/x", PID: a}},                                                  // b never acted
		{{Kind: "start", At: 110, What: "ns/x", PID: a}, {Kind: "start", At: 150, What: "ns/x", PID: b}}, // a only after the freeze
	} {
		if _, err := judge(acts, a, b, frozeAt); err == nil {
			t.Errorf("judge(%v) accepted a scenario that shows nothing", acts)
		}
	}
}
