package budget

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Unix(1000, 0)

// drain empties the bucket of s at now, so that every later request waits.
func drain(s *sched, now time.Time) {
	for s.take(now) {
	}
}

// grantAll gives n tokens, one a step of 1/rate, and returns the waiters
// granted with the time reached.
func grantAll(s *sched, now time.Time, n int) ([]*waiter, time.Time) {
	var got []*waiter
	step := time.Duration(float64(time.Second) / s.rate)
	for len(got) < n && s.waiting() > 0 {
		now = now.Add(step)
		got = append(got, s.dispatch(now)...)
	}
	return got, now
}

func enqueue(s *sched, lane Lane, controller string, n int) []*waiter {
	ws := make([]*waiter, n)
	for i := range ws {
		ws[i] = &waiter{lane: lane, ready: make(chan struct{})}
		s.enqueue(ws[i], controller)
	}
	return ws
}

func countLanes(ws []*waiter) map[string]int {
	n := map[string]int{}
	for _, w := range ws {
		k := w.lane.String()
		if w.flow != nil {
			k += "/" + w.flow.name
		}
		n[k]++
	}
	return n
}

func TestLanesGoInPriorityOrder(t *testing.T) {
	s := newSched(10, 1, t0)
	drain(s, t0)
	enqueue(s, LaneInformer, "", 1)
	enqueue(s, LaneReconcile, "a", 1)
	enqueue(s, LaneWebhook, "", 1)
	got, _ := grantAll(s, t0, 3)
	var order []string
	for _, w := range got {
		order = append(order, w.lane.String())
	}
	if diff := cmp.Diff([]string{"webhook", "reconcile", "informer"}, order); diff != "" {
		t.Errorf("grant order (-want +got):\n%s", diff)
	}
}

// Every lane flooded: the webhook lane takes what the lower lanes'
// reserves leave, and neither lower lane starves.
func TestReservesKeepLowerLanesGoing(t *testing.T) {
	s := newSched(10, 1, t0)
	drain(s, t0)
	enqueue(s, LaneWebhook, "", 1000)
	enqueue(s, LaneReconcile, "a", 1000)
	enqueue(s, LaneInformer, "", 1000)
	got, _ := grantAll(s, t0, 1000)
	n := countLanes(got)
	for lane, want := range map[string]int{"webhook": 700, "reconcile/a": 200, "informer": 100} {
		if math.Abs(float64(n[lane]-want)) > 2 {
			t.Errorf("%s got %d of 1000 tokens, want %d±2 (all: %v)", lane, n[lane], want, n)
		}
	}
	// Reconciles flooding, no reviews: the informers keep their reserve.
	s = newSched(10, 1, t0)
	drain(s, t0)
	enqueue(s, LaneReconcile, "a", 1000)
	enqueue(s, LaneInformer, "", 1000)
	got, _ = grantAll(s, t0, 1000)
	if n := countLanes(got); math.Abs(float64(n["informer"]-100)) > 2 {
		t.Errorf("informers got %d of 1000 tokens under a reconcile flood, want 100±2", n["informer"])
	}
}

func TestControllersShareByWeight(t *testing.T) {
	s := newSched(10, 1, t0)
	s.setWeight("heavy", 3)
	drain(s, t0)
	enqueue(s, LaneReconcile, "light", 2000)
	enqueue(s, LaneReconcile, "heavy", 2000)
	enqueue(s, LaneReconcile, "other", 2000)
	got, _ := grantAll(s, t0, 1000)
	n := countLanes(got)
	for c, want := range map[string]int{"reconcile/heavy": 600, "reconcile/light": 200, "reconcile/other": 200} {
		if math.Abs(float64(n[c]-want)) > 2 {
			t.Errorf("%s got %d of 1000 tokens, want %d±2 (all: %v)", c, n[c], want, n)
		}
	}
}

// A controller that asks while another floods is served within two
// tokens, however long the flood's backlog, and then keeps its share.
func TestQuietControllerIsNotStarved(t *testing.T) {
	s := newSched(10, 1, t0)
	drain(s, t0)
	enqueue(s, LaneReconcile, "flood", 10000)
	_, now := grantAll(s, t0, 500)
	quiet := enqueue(s, LaneReconcile, "quiet", 1)[0]
	got, _ := grantAll(s, now, 2)
	if !quiet.granted {
		t.Fatalf("the quiet controller's request was not among the next 2 grants (%v) behind a backlog of %d", countLanes(got), s.waiting())
	}
}

// A lease renewal never waits: it takes a free token, and with none free
// (the bucket empty, requests queued) the next one, at most one in two
// tokens' time, and goes without one otherwise, so that renewals more
// frequent than the budget cannot starve the other lanes.
func TestLeaseLaneNeverWaits(t *testing.T) {
	s := newSched(10, 5, t0)
	s.charge(t0)
	if s.tokens != 4 {
		t.Errorf("tokens after a renewal from a full bucket of 5: %v, want 4", s.tokens)
	}
	drain(s, t0)
	enqueue(s, LaneReconcile, "a", 100)
	for range 100 {
		s.charge(t0)
	}
	if s.tokens != -1 {
		t.Errorf("tokens after 100 renewals at an empty bucket: %v, want -1 (the first owes the next token, the rest went without)", s.tokens)
	}
	if got := s.dispatch(t0.Add(100 * time.Millisecond)); len(got) != 0 {
		t.Errorf("%d reconcile requests granted a token's time later, want 0: the first renewal took that token", len(got))
	}
	if got := s.dispatch(t0.Add(200 * time.Millisecond)); len(got) != 1 {
		t.Errorf("%d reconcile requests granted two tokens' time later, want 1: the renewals took what the reconciles waited for", len(got))
	}
}

// Renewals more frequent than the budget (two a second at one a second)
// take at most half of it from the requests waiting.
func TestRenewalsTakeAtMostHalfTheRate(t *testing.T) {
	s := newSched(1, 1, t0)
	enqueue(s, LaneReconcile, "a", 10000)
	granted := len(s.dispatch(t0))
	const step = 50 * time.Millisecond
	for now := t0.Add(step); !now.After(t0.Add(60 * time.Second)); now = now.Add(step) {
		if now.Sub(t0)%(500*time.Millisecond) == step {
			s.charge(now)
		}
		granted += len(s.dispatch(now))
	}
	if granted < 29 {
		t.Errorf("%d reconcile requests granted in 60s at 1 a second beside renewals at 2 a second, want at least half the rate's 60", granted)
	}
}

// Renewals in a saturated budget are paid for: each takes the next token
// when none is free (a debt of at most one), so that the operator sends
// its budget, renewals included, not the budget and the renewals on top
// (docs/reliability.md's scenario (c) sent 331 requests in a minute at 5
// a second, 306 allowed, about 30 of them renewals).
func TestRenewalsInASaturatedBudgetArePaidFor(t *testing.T) {
	const rate, burst, span = 5, 5, 60 * time.Second
	s := newSched(rate, burst, t0)
	enqueue(s, LaneReconcile, "a", 10000)
	sent := len(s.dispatch(t0))
	// Each token is granted as it comes; each renewal comes between two.
	step := time.Second / (8 * rate)
	for now := t0.Add(step); !now.After(t0.Add(span)); now = now.Add(step) {
		if now.Sub(t0)%(2*time.Second) == step {
			s.charge(now)
			sent++
		}
		sent += len(s.dispatch(now))
	}
	if allowed := rate*span.Seconds() + burst; float64(sent) > allowed+1 {
		t.Errorf("%d requests sent in %v at %d a second with a burst of %d, renewals every 2s included: over the %v allowed", sent, span, rate, burst, allowed)
	}
}

func TestCanceledWaitersAreSkipped(t *testing.T) {
	s := newSched(10, 1, t0)
	drain(s, t0)
	ws := enqueue(s, LaneInformer, "", 3)
	s.cancel(ws[0])
	rs := enqueue(s, LaneReconcile, "a", 2)
	s.cancel(rs[1])
	got, _ := grantAll(s, t0, 5)
	if diff := cmp.Diff(map[string]int{"informer": 2, "reconcile/a": 1}, countLanes(got)); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	if ws[0].granted || rs[1].granted || s.waiting() != 0 {
		t.Errorf("a canceled waiter was granted, or %d still wait", s.waiting())
	}
}

func TestPushbackHalvesThenRecovers(t *testing.T) {
	s := newSched(100, 200, t0)
	var rates []string
	note := func(now time.Time) {
		s.refill(now)
		rates = append(rates, fmt.Sprintf("%.1f", s.rate))
	}
	s.pushedBack(t0)
	note(t0)
	s.pushedBack(t0.Add(500 * time.Millisecond)) // the same burst's 429s: one signal
	note(t0.Add(500 * time.Millisecond))
	now := t0.Add(time.Second)
	s.pushedBack(now)
	note(now) // 55 (52.5 + 0.5s × 5/s) halved
	for range 10 {
		now = now.Add(time.Second)
		s.pushedBack(now)
	}
	note(now) // near the floor, 5% of 100
	now = now.Add(10 * time.Second)
	note(now) // 5 + 10 × 5
	now = now.Add(time.Minute)
	note(now) // back at the configured rate, no higher
	if diff := cmp.Diff([]string{"50.0", "52.5", "27.5", "5.0", "55.0", "100.0"}, rates); diff != "" {
		t.Errorf("rates (-want +got):\n%s", diff)
	}
	if s.tokens > 200 || s.tokens < 199 {
		t.Errorf("tokens after a quiet minute: %v, want the burst", s.tokens)
	}
}

// Without a configured rate nothing waits, until the server pushes back:
// then the rate is half what was being sent, and once it has grown to four
// times what is sent, requests go unlimited again.
func TestNoFixedRateAdapts(t *testing.T) {
	s := newSched(0, 0, t0)
	now := t0
	for i := range 400 { // 200 a second for 2s
		now = t0.Add(time.Duration(i) * 5 * time.Millisecond)
		if !s.take(now) {
			t.Fatalf("request %d waited without a fixed rate", i)
		}
	}
	s.pushedBack(now)
	if s.rate < 99 || s.rate > 101 {
		t.Fatalf("rate after a pushback at about 200 requests a second: %v, want about 100", s.rate)
	}
	if s.take(now) {
		t.Error("a request went at once right after the pushback: the bucket should be empty")
	}
	// Quiet from now on: the rate grows by a quarter of itself a second,
	// and stays limited until it is 4 times the rate measured.
	now = now.Add(time.Second)
	s.refill(now)
	if s.unlimited() || s.rate != 125 {
		t.Fatalf("rate a quiet second after the pushback: %v, want 125 (rate measured %v)", s.rate, s.measured)
	}
	now = now.Add(time.Minute)
	s.refill(now)
	if !s.unlimited() {
		t.Errorf("still limited (%v) a quiet minute after the pushback", s.rate)
	}
}

// A request the fair queue would serve next does not wait for the next
// token while others wait: it borrows it, one token at most, and the
// backlog's next grant comes a token later, so the rate is kept. A flow
// past its share, a second borrower before the debt is repaid, and a
// request that nothing else waits beside, all wait as before.
func TestNextInLineBorrowsOneToken(t *testing.T) {
	s := newSched(10, 1, t0)
	s.setWeight("flood", 3)
	drain(s, t0)
	if s.borrow(t0, "alone") {
		t.Fatal("a request borrowed with nothing else waiting: an empty bucket must make it wait")
	}
	enqueue(s, LaneReconcile, "flood", 100000)
	_, now := grantAll(s, t0, 50)
	if !s.borrow(now, "quiet") {
		t.Fatalf("the quiet controller's request, first in line behind a flood, waits for the next token (tokens %v)", s.tokens)
	}
	if s.borrow(now, "other") {
		t.Error("a second request borrowed before the first's token was repaid")
	}
	step := 100 * time.Millisecond
	if got := s.dispatch(now.Add(step)); len(got) != 0 {
		t.Errorf("%d of the flood's requests granted a token after the borrow, want 0: the borrowed token is repaid first", len(got))
	}
	if got := s.dispatch(now.Add(2 * step)); len(got) != 1 {
		t.Errorf("%d of the flood's requests granted two tokens after the borrow, want 1", len(got))
	}
	now = now.Add(2 * step)
	// A controller that asks at every token is past its share (a quarter,
	// by weight): it borrows a quarter of the time, and the tokens granted
	// keep to the rate.
	granted, borrowed := 0, 0
	for range 1000 {
		now = now.Add(step)
		granted += len(s.dispatch(now))
		if s.borrow(now, "quiet") {
			borrowed++
		}
	}
	if granted+borrowed < 999 || granted+borrowed > 1001 {
		t.Errorf("%d tokens granted over 1000 tokens' time, want 1000±1", granted+borrowed)
	}
	if borrowed < 248 || borrowed > 252 {
		t.Errorf("a controller of weight 1 asking at every token beside a flood of weight 3 borrowed %d of 1000 tokens, want 250±2", borrowed)
	}
}
