package queue

import "time"

// waitHeap is a min-heap of waiting nodes by at; each node knows its
// index.
type waitHeap[K comparable] []*node[K]

func (h *waitHeap[K]) push(n *node[K]) {
	n.state = stateWaiting
	n.heapIndex = int32(len(*h))
	*h = append(*h, n)
	h.up(int(n.heapIndex))
}

// pop removes and returns the earliest node.
func (h *waitHeap[K]) pop() *node[K] {
	n := (*h)[0]
	h.remove(n)
	return n
}

func (h *waitHeap[K]) remove(n *node[K]) {
	s := *h
	i, last := int(n.heapIndex), len(s)-1
	if i != last {
		s[i] = s[last]
		s[i].heapIndex = int32(i)
	}
	s[last] = nil
	*h = s[:last]
	if i != last {
		h.fixAt(i)
	}
	n.heapIndex = -1
}

// fix restores the heap after n.at changed.
func (h *waitHeap[K]) fix(n *node[K]) { h.fixAt(int(n.heapIndex)) }

func (h *waitHeap[K]) fixAt(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h waitHeap[K]) less(i, j int) bool { return h[i].at < h[j].at }

func (h waitHeap[K]) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = int32(i), int32(j)
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
	if n.heapIndex != 0 {
		return
	}
	select {
	case q.nudge <- struct{}{}:
	default:
	}
}

// delayLoop moves waiting nodes to the ready set when their time comes. It
// ends at ShutDown.
func (q *Queue[K]) delayLoop() {
	for {
		wait, ok := q.promoteDue()
		if !ok {
			if !q.sleep(nil) {
				return
			}
			continue
		}
		t := q.clock.NewTimer(wait)
		more := q.sleep(t.C())
		t.Stop()
		if !more {
			return
		}
	}
}

// promoteDue makes every due waiting node ready and returns how long until
// the next one is due (ok false when none waits).
func (q *Queue[K]) promoteDue() (wait time.Duration, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		return 0, false
	}
	now := q.now()
	for len(q.waiting) > 0 && q.waiting[0].at <= now {
		q.makeReady(q.waiting.pop(), now)
	}
	if len(q.waiting) == 0 {
		return 0, false
	}
	return time.Duration(q.waiting[0].at - now), true
}

// sleep waits for the timer, a nudge or ShutDown; it returns false at
// ShutDown.
func (q *Queue[K]) sleep(timer <-chan time.Time) bool {
	select {
	case <-timer:
	case <-q.nudge:
	case <-q.stop:
		return false
	}
	return true
}
