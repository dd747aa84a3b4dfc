package queue

import (
	"time"

	"k8s.io/utils/clock"
)

// noReading stands for no early reading of the clock: see readClock.
const noReading int64 = -1

// readClock returns a reading of the clock and refreshes the stamp with it.
// The reading is early, if the operation took one before the lock, or one
// taken now. Adds with a delay and, with metrics on, every operation read the
// clock, an eighth of the time of MetricsContended in profiles; reading it
// before the lock keeps that out of the time the lock is held. An early
// reading may be older than the stamp, by at most the wait for the lock, and
// the stamp is returned then: readings never go back, so the age ring stays
// in the order of its nodes' times. A key's time may thus precede the
// operation by the wait for the lock, which is far less than the tick by
// which aging errs late.
func (q *Queue[K]) readClock(early int64) int64 {
	now := early
	if now == noReading {
		now = q.now()
	}
	now = max(now, q.stamp)
	q.stamp = now
	return now
}

// stampNow returns the stamp, at most one tick old. If the delay loop is not
// refreshing it, it reads the clock and sets the loop ticking.
func (q *Queue[K]) stampNow() int64 {
	if !q.ticking {
		q.readClock(noReading)
		q.ticking = true
		q.nudgeDelayLoop()
	}
	return q.stamp
}

// now reads the queue's clock as nanoseconds since New. With the system
// clock that is one monotonic clock read (time.Since), about half the cost
// of time.Now, which also reads the wall clock.
func (q *Queue[K]) now() int64 {
	if q.systemClock {
		return int64(time.Since(q.start))
	}
	return int64(q.clock.Now().Sub(q.start))
}

// isSystemClock reports whether c is k8s.io/utils/clock's RealClock, which
// now may read by time.Since.
func isSystemClock(c clock.Clock) bool {
	switch c.(type) {
	case clock.RealClock, *clock.RealClock:
		return true
	}
	return false
}
