package wallclock

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Between wall-clock readings a Clock tells the time by the monotonic
// clock; a second after its last reading it reads the wall clock again,
// and so shows a step of it.
func TestClock(t *testing.T) {
	wall := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	var mono, monoAtRead time.Duration // the monotonic clock, now and at the last reading
	reads := 0
	c := &Clock{
		now:   func() time.Time { reads++; monoAtRead = mono; return wall.Add(mono) },
		since: func(time.Time) time.Duration { return mono - monoAtRead },
	}
	steps := []struct {
		advance time.Duration // the monotonic clock advances by
		step    time.Duration // and the wall clock is stepped by
	}{
		{0, 0},
		{300 * time.Millisecond, 0},
		{300 * time.Millisecond, time.Hour}, // not seen yet
		{500 * time.Millisecond, 0},         // a second since the reading: seen
		{100 * time.Millisecond, 0},
	}
	var got []time.Time
	for _, s := range steps {
		mono += s.advance
		wall = wall.Add(s.step)
		got = append(got, c.Now())
	}
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	want := []time.Time{
		start,
		start.Add(300 * time.Millisecond),
		start.Add(600 * time.Millisecond),
		start.Add(time.Hour + 1100*time.Millisecond),
		start.Add(time.Hour + 1200*time.Millisecond),
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(time.Time.Equal)); diff != "" {
		t.Errorf("times (-want +got):\n%s", diff)
	}
	if reads != 2 {
		t.Errorf("%d wall-clock readings, want 2", reads)
	}
}

// The zero Clock reads the system's clocks, and its times measure
// durations by the monotonic clock.
func TestZeroClock(t *testing.T) {
	var c Clock
	before := time.Now()
	a := c.Now()
	b := c.Now()
	after := time.Now()
	if a.Before(before.Add(-time.Millisecond)) || b.Before(a) || after.Add(time.Millisecond).Before(b) {
		t.Errorf("times %v, %v not between %v and %v", a, b, before, after)
	}
	if time.Since(b) < 0 {
		t.Error("a time of the clock lacks a monotonic reading")
	}
}
