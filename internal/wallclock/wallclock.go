// Package wallclock tells the wall-clock time for the lag metrics at the
// cost of one reading of the monotonic clock, where time.Now reads both
// clocks: on the 2-core VM of docs/performance.md a clock read costs 70 to
// 80 ns, and the lag metrics need the wall clock's time once an event and
// once a reconcile, to compare with the API server's timestamps.
//
//   - A Clock reads the wall clock at most once a second and tells the
//     time in between as that reading plus the monotonic time since, so a
//     step or slew of the wall clock shows within a second. The lag
//     metrics count whole seconds of the API server's timestamps.
//   - The times it returns carry a monotonic reading, so time.Since and
//     Sub between them measure durations as time.Now's do.
//   - Safe for concurrent use; the zero Clock is ready.
package wallclock

import (
	"sync/atomic"
	"time"
)

// refresh is how long a Clock tells the time from one wall-clock reading.
const refresh = time.Second

// Clock tells the time from a recent wall-clock reading (see the package
// doc).
type Clock struct {
	anchor atomic.Pointer[time.Time] // the last reading of both clocks
	// now and since read the clocks: time.Now and time.Since when nil.
	now   func() time.Time
	since func(time.Time) time.Duration
}

// Now returns the current time.
func (c *Clock) Now() time.Time {
	if a := c.anchor.Load(); a != nil {
		if d := c.sinceAnchor(*a); d < refresh {
			return a.Add(d)
		}
	}
	now := c.read()
	c.anchor.Store(&now)
	return now
}

func (c *Clock) read() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *Clock) sinceAnchor(a time.Time) time.Duration {
	if c.since != nil {
		return c.since(a)
	}
	return time.Since(a)
}
