package queue

import (
	"time"

	"k8s.io/utils/clock"
)

// waitHeap is a min-heap of waiting nodes by at, then by waitSeq, so that
// nodes due at one instant leave it in the order they entered; each node
// knows its index.
type waitHeap[K comparable] []*node[K]

// push adds n, which is seq-th to enter the heap.
func (h *waitHeap[K]) push(n *node[K], seq uint64) {
	n.state = stateWaiting
	n.setWaitSeq(seq)
	n.index = int32(len(*h))
	*h = append(*h, n)
	h.up(int(n.index))
}

// pop removes and returns the earliest node.
func (h *waitHeap[K]) pop() *node[K] {
	n := (*h)[0]
	h.remove(n)
	return n
}

func (h *waitHeap[K]) remove(n *node[K]) {
	s := *h
	i, last := int(n.index), len(s)-1
	if i != last {
		s[i] = s[last]
		s[i].index = int32(i)
	}
	s[last] = nil
	*h = s[:last]
	if i != last {
		h.fixAt(i)
	}
	n.index = -1
}

// fix restores the heap after n.at changed.
func (h *waitHeap[K]) fix(n *node[K]) { h.fixAt(int(n.index)) }

func (h *waitHeap[K]) fixAt(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h waitHeap[K]) less(i, j int) bool {
	a, b := h[i], h[j]
	return a.at < b.at || a.at == b.at && a.waitSeq() < b.waitSeq()
}

func (h waitHeap[K]) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = int32(i), int32(j)
}

func (h waitHeap[K]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h waitHeap[K]) down(i int) bool {
	start := i
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		j := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > start
}

// wakeDelayLoop tells the delay loop to look again if n is now the earliest
// waiting node.
func (q *Queue[K]) wakeDelayLoop(n *node[K]) {
	if n.index == 0 {
		q.nudgeDelayLoop()
	}
}

// nudgeDelayLoop tells the delay loop to look again.
func (q *Queue[K]) nudgeDelayLoop() {
	select {
	case q.nudge <- struct{}{}:
	default:
	}
}

// delayLoop moves waiting nodes to the ready set when their time comes and,
// while keys are ready, refreshes the stamp every tick. It ends at ShutDown.
func (q *Queue[K]) delayLoop() {
	timedOut, more := false, true
	for more {
		timedOut, more = q.rest(q.advance(timedOut))
	}
}

// rest sleeps until the clock reaches at (ok false: no time), a nudge or
// ShutDown. It reports whether the time came, and false for more at
// ShutDown.
func (q *Queue[K]) rest(at int64, ok bool) (timedOut, more bool) {
	if !ok {
		return q.sleep(nil)
	}
	t, due := q.armTimer(at)
	if due {
		select {
		case <-q.stop:
			return false, false
		default:
			return true, true
		}
	}
	defer t.Stop()
	return q.sleep(t.C())
}

// armTimer returns a timer that fires when the clock reaches at, or due true
// if it has already.
//
// at was worked out from a reading taken under the lock. A fake clock's Step
// can land between that reading and the arming; a timer armed for at minus
// that reading would then be due the Step late, and the queue would sleep
// past the key it meant to wake for until the clock is stepped again (a test
// that Steps past a RequeueAfter would hang now and then). So the clock is
// read again to arm the timer, and once more after arming, for a Step that
// lands in between and passes at.
func (q *Queue[K]) armTimer(at int64) (t clock.Timer, due bool) {
	left := time.Duration(at - q.now())
	if left <= 0 {
		return nil, true
	}
	t = q.clock.NewTimer(left)
	if q.now() >= at {
		t.Stop()
		return nil, true
	}
	return t, false
}

// advance makes every due waiting node ready, refreshes the stamp, and
// returns when the delay loop should wake, in the clock's nanoseconds since
// New: when the next node is due or, while the stamp ticks, one tick on (ok
// false when nothing needs it to wake). The stamp stops ticking when a tick
// finds no key ready (timedOut: the loop woke because its timer fired, not
// because it was nudged); the next add restarts it. So a queue that keeps
// emptying wakes the loop at most once a tick, and an idle one not at all.
func (q *Queue[K]) advance(timedOut bool) (at int64, ok bool) {
	q.mu.Lock()
	at, ok, due := q.advanceLocked(timedOut)
	q.unlock()
	if q.metrics.on {
		for range due {
			q.metrics.adds.Inc()
		}
	}
	return at, ok
}

// advanceLocked does the work of advance and also returns how many nodes it
// made ready: each counts in workqueue_adds_total.
func (q *Queue[K]) advanceLocked(timedOut bool) (at int64, ok bool, due int) {
	if len(q.waiting) == 0 && !q.ticking {
		return 0, false, 0
	}
	now := q.readClock(noReading)
	for len(q.waiting) > 0 && q.waiting[0].at <= now {
		q.makeReady(q.waiting.pop(), now)
		due++
	}
	if len(q.waiting) > 0 {
		at, ok = q.waiting[0].at, true
	}
	if timedOut && q.ready.n == 0 {
		q.ticking = false
	}
	if tick := now + int64(q.tick); q.ticking && (!ok || tick < at) {
		at, ok = tick, true
	}
	return at, ok, due
}

// sleep waits for the timer (nil: none), a nudge or ShutDown. It reports
// whether the timer fired, and false for more at ShutDown.
func (q *Queue[K]) sleep(timer <-chan time.Time) (timedOut, more bool) {
	select {
	case <-timer:
		return true, true
	case <-q.nudge:
		return false, true
	case <-q.stop:
		return false, false
	}
}
