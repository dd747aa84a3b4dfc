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
