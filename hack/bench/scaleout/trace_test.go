package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestReadTraceAndEarlyLate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.log.trace")
	base := time.Unix(1000, 0)
	var lines string
	// Ten reconciles a second apart, each 10 ms longer than the one
	// before it, 100 ms to 190 ms, written out of order; one before the
	// phase, one that found nothing to do, and a last line cut short.
	for _, i := range []int{9, 0, 1, 2, 3, 4, 5, 6, 7, 8} {
		start := base.Add(time.Duration(i) * time.Second)
		lines += formatTraced(start, time.Duration(100+10*i)*time.Millisecond, "ns/obj")
	}
	lines += formatTraced(base.Add(-time.Second), 500*time.Millisecond, "ns/early")
	lines += formatTraced(base.Add(3*time.Second), time.Millisecond, "ns/nothing-to-do")
	lines += "1000"
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := readTrace(path, base, base.Add(time.Minute), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 10 {
		t.Fatalf("read %d reconciles, want the 10 in the phase that took 50 ms or more", len(rs))
	}
	for i, r := range rs {
		if want := base.Add(time.Duration(i) * time.Second); !r.start.Equal(want) {
			t.Fatalf("reconcile %d began at %v, want %v: sorted by start", i, r.start, want)
		}
	}
	// Fifths of two: the first two took 100 and 110 ms, the last two 180
	// and 190.
	if early, late := earlyLate(rs); early != 105 || late != 185 {
		t.Errorf("earlyLate = %v, %v; want 105, 185", early, late)
	}
	if early, late := earlyLate(rs[:4]); early != 0 || late != 0 {
		t.Errorf("earlyLate of 4 = %v, %v; want 0, 0", early, late)
	}
	if err := os.WriteFile(path, []byte("x y ns/obj\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readTrace(path, base, base.Add(time.Minute), 0); err == nil {
		t.Error("readTrace of a line that does not parse: no error")
	}
}

func TestLargestSlotRead(t *testing.T) {
	r := roundResult{
		// Slot 1 holds half the objects and a third of the load.
		SlotObjects: []float64{10, 20, 10},
		PlanLoads:   []float64{1, 1, 1},
	}
	if got, want := largestSlotRead(r), (1.0/3)/(20.0/40); got != want {
		t.Errorf("largestSlotRead = %v, want %v", got, want)
	}
	if got := largestSlotRead(roundResult{SlotObjects: []float64{1, 2}}); got != 0 {
		t.Errorf("largestSlotRead without a plan = %v, want 0", got)
	}
}

// formatTraced writes a trace line as the operator does.
func formatTraced(start time.Time, took time.Duration, key string) string {
	return fmt.Sprintf("%d %d %s\n", start.UnixNano(), took.Nanoseconds(), key)
}
