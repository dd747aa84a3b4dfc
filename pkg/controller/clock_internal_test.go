package controller

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func fired(t interface{ C() <-chan time.Time }) bool {
	select {
	case <-t.C():
		return true
	default:
		return false
	}
}

// A Step between the queue's reading of the time and its arming of a timer
// must not push the timer's deadline back by the Step.
func TestTimerArmedAfterAStepIsDueFromTheReading(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := queueClock(fake)
	c.Now()                               // the queue reads the time…
	fake.Step(time.Minute)                // …a test steps the clock…
	timer := c.NewTimer(30 * time.Second) // …and the queue arms a timer
	if !fired(timer) {
		t.Fatal("a timer for 30s after a reading one minute ago has not fired; the queue would sleep past its key")
	}

	c.Now()
	fake.Step(10 * time.Second)
	timer = c.NewTimer(30 * time.Second) // 20s left of the 30s
	fake.Step(19 * time.Second)
	if fired(timer) {
		t.Fatal("the timer fired 29s after the reading, want 30s")
	}
	fake.Step(time.Second)
	if !fired(timer) {
		t.Fatal("the timer has not fired 30s after the reading")
	}
}

func TestNilClockIsTheQueueDefault(t *testing.T) {
	if c := queueClock(nil); c != nil {
		t.Errorf("queueClock(nil) = %v, want nil, which the queue takes as the system clock", c)
	}
}
