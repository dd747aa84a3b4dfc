package controller

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/opkit-dev/opkit/pkg/queue"
)

// queueClock adapts Options.Clock to the queue's Clock, or returns nil (the
// queue's default, the system clock) for nil.
func queueClock(c clock.Clock) queue.Clock {
	if c == nil {
		return nil
	}
	return &clockAdapter{c: c}
}

// clockAdapter is a k8s.io/utils/clock.Clock as a queue.Clock, whose timers
// are due at the deadline the queue meant.
//
// The queue reads the time, works out how long to sleep until the next
// delayed key is due, and arms a timer for that long. A fake clock's Step
// can land between the reading and the arming; the timer would then be
// armed from the stepped time, and the queue would sleep past the key it
// meant to wake for, until the clock is stepped again: a test that Steps
// past a RequeueAfter would hang now and then. So a timer is armed for d
// after the latest reading instead, and fires at once if the clock has
// passed that already. With a real clock the two differ by the nanoseconds
// between reading and arming.
type clockAdapter struct {
	c clock.Clock

	mu     sync.Mutex
	latest time.Time // the latest time Now returned
}

var _ queue.Clock = (*clockAdapter)(nil)

func (a *clockAdapter) Now() time.Time {
	now := a.c.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if now.After(a.latest) {
		a.latest = now
	}
	return now
}

func (a *clockAdapter) NewTimer(d time.Duration) queue.Timer {
	a.mu.Lock()
	latest := a.latest
	a.mu.Unlock()
	if latest.IsZero() {
		return a.c.NewTimer(d) // never read: nothing to arm it from but now
	}
	left := -a.c.Since(latest.Add(d))
	if left <= 0 {
		return newFiredTimer(a.c.Now())
	}
	return a.c.NewTimer(left)
}

// firedTimer is a timer whose deadline had passed when it was made.
type firedTimer struct{ c chan time.Time }

func newFiredTimer(now time.Time) firedTimer {
	t := firedTimer{make(chan time.Time, 1)}
	t.c <- now
	return t
}

func (t firedTimer) C() <-chan time.Time { return t.c }
func (firedTimer) Stop() bool            { return false }
