package queue

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// A key added with a delay is handed out once a fake clock is stepped past
// the delay, whenever the Step lands relative to the delay loop's reading of
// the clock and its arming of a timer.
func TestFakeClockStepsPastADelay(t *testing.T) {
	for range 20 {
		fake := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		q := newQueue(t, Options[string]{Clock: fake})
		q.AddAfter("k", time.Hour)
		fake.Step(time.Hour) // Get blocks, and the test times out, if the loop sleeps past the key
		if k, _, _ := q.Get(); k != "k" {
			t.Fatalf("Get = %q, want k", k)
		}
		q.Done("k")
	}
}

// A Step between the delay loop's reading of the clock and its arming of a
// timer must not push the timer's deadline back by the Step.
func TestTimerArmedAfterAStepIsDueFromTheReading(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := newQueue(t, Options[string]{Clock: fake})

	at := q.now() + int64(30*time.Second) // the loop reads the time…
	fake.Step(time.Minute)                // …a test steps the clock…
	if _, due := q.armTimer(at); !due {   // …and the loop arms a timer
		t.Fatal("a timer for 30s after a reading one minute ago is not due; the queue would sleep past its key")
	}

	at = q.now() + int64(30*time.Second)
	fake.Step(10 * time.Second)
	timer, due := q.armTimer(at) // 20s left of the 30s
	if due {
		t.Fatal("a timer for 30s after a reading 10s ago is due")
	}
	defer timer.Stop()
	fake.Step(19 * time.Second)
	if fired(timer.C()) {
		t.Fatal("the timer fired 29s after the reading, want 30s")
	}
	fake.Step(time.Second)
	if !fired(timer.C()) {
		t.Fatal("the timer has not fired 30s after the reading")
	}
}

func fired(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
