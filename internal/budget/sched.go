package budget

import (
	"math"
	"time"
)

// Lane is the class of an API request, in the budget's priority order.
type Lane int

// The lanes, highest priority first.
const (
	// LaneLease: lease renewals (leader election, sharding membership).
	// A request of this lane never waits: it takes a token if one is
	// free, or the next one (see charge), and goes without one otherwise,
	// so that it is never held up by the other lanes, and never starves
	// them either (a budget smaller than the renewals' own traffic would
	// otherwise stop everything else).
	LaneLease Lane = iota
	// LaneHealth: the requests of the manager's health and readiness
	// checks, which a probe waits for. Served as LaneLease is (never
	// waits), so that a flooded budget never fails a probe of a healthy
	// process; the manager bounds how often checks run (docs/api-budget.md).
	LaneHealth
	// LaneWebhook: the reviews the webhook and metrics servers ask for
	// (SubjectAccessReviews, TokenReviews) while a caller waits.
	LaneWebhook
	// LaneReconcile: the reads and writes of reconciles, shared among
	// controllers by weight, and requests no lane claims.
	LaneReconcile
	// LaneInformer: informers' lists, relists and watches.
	LaneInformer
	numLanes
)

func (l Lane) String() string {
	switch l {
	case LaneLease:
		return "lease"
	case LaneHealth:
		return "health"
	case LaneWebhook:
		return "webhook"
	case LaneReconcile:
		return "reconcile"
	case LaneInformer:
		return "informer"
	}
	return "unknown"
}

// urgent reports whether l's requests never wait: they take a token if
// one is free, or the next one, and go without one otherwise (charge),
// and go ahead of the others
// waiting for room in the window of requests in flight.
func (l Lane) urgent() bool { return l == LaneLease || l == LaneHealth }

// reserve is the share of the tokens granted while the bucket is
// contended that l gets whenever it has requests waiting, whatever the
// lanes above it want: so that a flood of reviews cannot stop reconciles,
// nor reconciles the informers' relists. The urgent lanes need none: they
// never wait.
func (l Lane) reserve() float64 {
	switch l {
	case LaneReconcile:
		return 0.2
	case LaneInformer:
		return 0.1
	}
	return 0
}

// Unattributed is the flow of the reconcile lane that carries the requests
// sent outside any controller's reconcile (events, runnables of the
// user's, discovery).
const Unattributed = "unattributed"

// AIMD's constants: on a 429 or a Retry-After the rate is multiplied by
// decrease, at most once per decreaseSpacing (the 429s of one burst are
// one signal); it then grows back by recoverFraction of the configured
// rate per second, and never falls below floorFraction of it.
const (
	decrease        = 0.5
	decreaseSpacing = time.Second
	recoverFraction = 0.05
	floorFraction   = 0.05
	minFloor        = 1.0
	// liftAfter is how long after the last pushback a rate taken without
	// a configured one may be lifted.
	liftAfter = 30 * time.Second
)

// waiter is a request waiting for a token. granted and canceled are
// guarded by the Budget's mutex; ready is closed once granted.
type waiter struct {
	lane     Lane
	flow     *flow // in LaneReconcile; nil otherwise
	ready    chan struct{}
	granted  bool
	canceled bool
	closed   bool // the Budget closed while it waited
}

// fifo is a queue of waiters; live counts those not canceled, which are
// skipped when they reach the head.
type fifo struct {
	items []*waiter
	live  int
}

func (q *fifo) push(w *waiter) {
	q.items = append(q.items, w)
	q.live++
}

// pop returns the first live waiter; q.live > 0.
func (q *fifo) pop() *waiter {
	for {
		w := q.items[0]
		q.items[0] = nil
		q.items = q.items[1:]
		if !w.canceled {
			q.live--
			return w
		}
	}
}

// flow is a controller's share of the reconcile lane: start-time fair
// queueing, where each grant moves the flow's tag on by 1/weight, and a
// flow that becomes busy starts at the lane's virtual time, so that an
// idle flow banks nothing and a busy one cannot starve another.
type flow struct {
	name   string
	weight float64
	fifo
	start  float64 // the tag of the flow's next grant, while it has waiters
	finish float64 // the tag after its last grant
}

// sched is the budget's state: a token bucket whose rate AIMD adapts, and
// the waiters by lane. It does not lock, read clocks or start timers: the
// Budget does, so that it can be tested in fake time by calls alone.
type sched struct {
	configured float64 // tokens a second asked for; +Inf: no fixed rate
	burst      float64
	rate       float64 // now; +Inf while no fixed rate and no 429 seen
	tokens     float64
	last       time.Time // of the last refill

	lastDecrease time.Time
	// lastDebt is when an urgent request last took a token the bucket
	// did not hold (charge).
	lastDebt time.Time
	// window counts the tokens granted since windowStart, to measure the
	// rate sent when no fixed rate applies; measured is the last full
	// window's.
	window      float64
	windowStart time.Time
	measured    float64

	lanes   [numLanes]fifo // LaneReconcile's waiters are in flows
	flows   map[string]*flow
	vtime   float64 // the reconcile lane's virtual time
	credit  [numLanes]float64
	weights map[string]float64
	// weightOf, when set, gives the weights instead of weights: asked
	// when a flow is made and each time it starts to wait.
	weightOf func(controller string) float64
}

func newSched(qps float64, burst int, now time.Time) *sched {
	s := &sched{configured: math.Inf(1), rate: math.Inf(1), last: now, windowStart: now,
		flows: map[string]*flow{}, weights: map[string]float64{}}
	if qps > 0 {
		s.configured, s.rate = qps, qps
		s.burst = float64(max(burst, 1))
		s.tokens = s.burst
	}
	return s
}

func (s *sched) unlimited() bool { return math.IsInf(s.rate, 1) }

// refill adds the tokens and the additive increase due since the last
// refill.
func (s *sched) refill(now time.Time) {
	if d := now.Sub(s.windowStart); d >= time.Second {
		s.measured = s.window / d.Seconds()
		s.window, s.windowStart = 0, now
	}
	dt := now.Sub(s.last).Seconds()
	if dt <= 0 || s.unlimited() {
		s.last = now
		return
	}
	s.last = now
	s.tokens = min(s.burst, s.tokens+s.rate*dt)
	if s.rate < s.configured {
		s.rate = min(s.configured, s.rate+s.step()*dt)
		if math.IsInf(s.configured, 1) && s.rate >= 4*max(s.measured, minFloor) && s.waiting() == 0 &&
			now.Sub(s.lastDecrease) >= liftAfter {
			// The rate no longer binds what is sent, and the server has
			// not pushed back for a while: back to none.
			s.rate = s.configured
		}
	}
}

// step is the increase a second: additive toward a configured rate;
// without one, a quarter of the rate in force, since the server's limit
// is unknown and a pushback may have come while the operator sent little.
func (s *sched) step() float64 {
	if math.IsInf(s.configured, 1) {
		return max(s.rate/4, minFloor)
	}
	return max(recoverFraction*s.configured, minFloor)
}

// floor is the lowest rate a decrease reaches.
func (s *sched) floor() float64 {
	if math.IsInf(s.configured, 1) {
		return minFloor
	}
	return max(floorFraction*s.configured, minFloor)
}

// pushedBack records a 429 or a Retry-After: the rate is halved (without
// a fixed rate, from the rate measured over the last second), at most once
// per decreaseSpacing, and the bucket emptied. It reports whether the rate
// changed.
func (s *sched) pushedBack(now time.Time) bool {
	if !s.lastDecrease.IsZero() && now.Sub(s.lastDecrease) < decreaseSpacing {
		return false
	}
	s.refill(now)
	s.lastDecrease = now
	if s.unlimited() {
		sent := max(s.measured, s.window/max(now.Sub(s.windowStart).Seconds(), 1))
		s.burst = max(sent*decrease, minFloor)
		s.rate = s.burst
	} else {
		s.rate = max(s.rate*decrease, s.floor())
	}
	s.tokens = min(s.tokens, 0)
	return true
}

// charge takes a token for an urgent lane's request at once, and never
// makes it wait: a free token if there is one; else the next token, which
// the bucket then owes (at most one), so that the other lanes wait for it
// and the budget holds, renewals included; but no more often than every
// two tokens' time, and the request goes without one otherwise, so that
// urgent requests more frequent than that cannot take more than half the
// rate from the other lanes.
func (s *sched) charge(now time.Time) {
	s.refill(now)
	s.window++
	switch {
	case s.unlimited():
	case s.tokens >= 1:
		s.tokens--
	case s.tokens >= 0 && (s.lastDebt.IsZero() || now.Sub(s.lastDebt).Seconds() >= 2/s.rate):
		s.tokens--
		s.lastDebt = now
	}
}

// take takes a token for a request of a waiting lane if one is free and
// nothing waits before it, and reports whether it did.
func (s *sched) take(now time.Time) bool {
	s.refill(now)
	if !s.unlimited() && (s.waiting() > 0 || s.tokens < 1) {
		return false
	}
	if !s.unlimited() {
		s.tokens--
	}
	s.window++
	return true
}

// borrow takes, for a reconcile request of controller that take refused,
// the token the bucket will hold next, if the lane's fair queueing would
// serve the request next anyway and others wait: its flow has no request
// waiting, its tag is no more than one of its requests later than any
// waiting flow's, and no other lane waits. It goes now rather than when that token comes, and the backlog,
// whose requests emptied the bucket, waits one token longer; the rate is
// kept, as the bucket owes at most one token. A request with nothing
// else waiting never borrows: the next token is its own. It reports
// whether it took one.
func (s *sched) borrow(now time.Time, controller string) bool {
	s.refill(now)
	if s.unlimited() || s.tokens < 0 || s.lanes[LaneReconcile].live == 0 {
		return false
	}
	for l := range numLanes {
		if l != LaneReconcile && s.lanes[l].live > 0 {
			return false
		}
	}
	f := s.flow(controller)
	if f.live > 0 {
		return false
	}
	// One request of slack: a flow that keeps to its share on average
	// may ask a little early (a burst of two events) and still go first.
	start := max(f.finish, s.vtime)
	for _, o := range s.flows {
		if o.live > 0 && o.start < start-1/f.weight {
			return false
		}
	}
	s.tokens--
	s.window++
	s.vtime = start
	f.finish = start + 1/f.weight
	return true
}

// giveBack returns a token that take or dispatch granted and nobody
// spent: to the bucket, and out of the rate measured.
func (s *sched) giveBack() {
	if !s.unlimited() {
		s.tokens++
	}
	s.window = max(s.window-1, 0)
}

// waiting counts the waiters of every lane.
func (s *sched) waiting() int {
	n := 0
	for l := range s.lanes {
		n += s.lanes[l].live
	}
	return n
}

// enqueue queues w; controller names its flow in the reconcile lane.
func (s *sched) enqueue(w *waiter, controller string) {
	if w.lane != LaneReconcile {
		s.lanes[w.lane].push(w)
		return
	}
	// The reconcile lane counts its waiters; its flows hold them.
	s.lanes[LaneReconcile].live++
	f := s.flow(controller)
	if f.live == 0 {
		f.start = max(f.finish, s.vtime)
		if s.weightOf != nil {
			f.weight = s.weight(controller)
		}
	}
	f.push(w)
	w.flow = f
}

// flow returns the reconcile lane's flow of controller, made at its first
// request.
func (s *sched) flow(controller string) *flow {
	f := s.flows[controller]
	if f == nil {
		f = &flow{name: controller, weight: s.weight(controller), start: s.vtime, finish: s.vtime}
		s.flows[controller] = f
	}
	return f
}

// weight returns controller's weight: weightOf's if set, else
// setWeight's; 1 if neither is positive.
func (s *sched) weight(controller string) float64 {
	w := s.weights[controller]
	if s.weightOf != nil {
		w = s.weightOf(controller)
	}
	if !(w > 0) || math.IsInf(w, 1) {
		return 1
	}
	return w
}

// closeAll removes every live waiter, and returns them.
func (s *sched) closeAll() []*waiter {
	var out []*waiter
	take := func(q *fifo) {
		for _, w := range q.items {
			if !w.canceled {
				out = append(out, w)
			}
		}
		clear(q.items)
		q.items, q.live = q.items[:0], 0
	}
	for l := range s.lanes {
		take(&s.lanes[l])
	}
	for _, f := range s.flows {
		take(&f.fifo)
	}
	return out
}

// setWeight sets controller's weight in the reconcile lane; <= 0 means 1.
func (s *sched) setWeight(controller string, w float64) {
	if w <= 0 {
		w = 1
	}
	s.weights[controller] = w
	if f := s.flows[controller]; f != nil {
		f.weight = w
	}
}

// forget drops controller's weight, and its flow once idle.
func (s *sched) forget(controller string) {
	delete(s.weights, controller)
	if f := s.flows[controller]; f != nil && f.live == 0 {
		delete(s.flows, controller)
	}
}

// cancel removes w, which has not been granted. A queue left with no
// live waiter drops the canceled ones it holds.
func (s *sched) cancel(w *waiter) {
	w.canceled = true
	q := &s.lanes[w.lane]
	q.live--
	if w.flow != nil {
		w.flow.live--
		q = &w.flow.fifo
	}
	if q.live == 0 {
		clear(q.items)
		q.items = q.items[:0]
	}
}

// dispatch grants free tokens to waiters, in lane order with reserves,
// and returns them.
func (s *sched) dispatch(now time.Time) []*waiter {
	s.refill(now)
	var granted []*waiter
	for s.waiting() > 0 && (s.unlimited() || s.tokens >= 1) {
		w := s.next()
		w.granted = true
		s.window++
		if !s.unlimited() {
			s.tokens--
		}
		granted = append(granted, w)
	}
	return granted
}

// next removes and returns the waiter the next token goes to: the highest
// lane owed its reserve, else the highest lane with waiters.
func (s *sched) next() *waiter {
	pick := numLanes
	for l := range numLanes {
		if s.lanes[l].live == 0 {
			continue
		}
		// Up to 2, so that credit earned while another lane's reserve is
		// served is kept, not capped away.
		s.credit[l] = min(s.credit[l]+l.reserve(), 2)
		if pick == numLanes {
			pick = l
		}
	}
	for l := range numLanes {
		if s.lanes[l].live > 0 && s.credit[l] >= 1 {
			pick = l
			break
		}
	}
	if s.credit[pick] >= 1 {
		s.credit[pick]--
	}
	if pick != LaneReconcile {
		return s.lanes[pick].pop()
	}
	s.lanes[pick].live--
	return s.nextInFlows()
}

// nextInFlows removes and returns the waiter of the reconcile lane's flow
// with the lowest start tag (ties by name, for determinism).
func (s *sched) nextInFlows() *waiter {
	var best *flow
	for _, f := range s.flows {
		if f.live == 0 {
			continue
		}
		if best == nil || f.start < best.start || (f.start == best.start && f.name < best.name) {
			best = f
		}
	}
	w := best.pop()
	s.vtime = best.start
	best.finish = best.start + 1/best.weight
	best.start = best.finish
	return w
}

// until is how long until the next token, while waiters wait.
func (s *sched) until() time.Duration {
	if s.unlimited() || s.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - s.tokens) / s.rate * float64(time.Second))
}
