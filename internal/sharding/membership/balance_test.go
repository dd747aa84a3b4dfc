package membership

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// floor is the least the busiest member's load over the mean can be with
// n members holding slots/n slots or one more: at least the mean, and at
// least the heaviest slot with the lightest others beside it.
func floor(w []float64, n int) float64 {
	sorted := slices.Sorted(slices.Values(w))
	total := 0.0
	for _, v := range w {
		total += v
	}
	least := sorted[len(sorted)-1]
	for _, v := range sorted[:len(w)/n-1] {
		least += v
	}
	return max(1, least/(total/float64(n)))
}

// loadsOf returns each member's load under owner, and the busiest one's
// over the mean.
func loadsOf(ms, owner []string, w []float64) (map[string]float64, float64) {
	loads := map[string]float64{}
	total := 0.0
	for s, m := range owner {
		loads[m] += w[s]
		total += w[s]
	}
	busiest := 0.0
	for _, l := range loads {
		busiest = max(busiest, l)
	}
	return loads, busiest / (total / float64(len(ms)))
}

// poisson draws each slot's object count for objects spread over slots by
// a uniform hash, as ByUID spreads them.
func poisson(r *rand.Rand, slots, objects int) []float64 {
	w := make([]float64, slots)
	for range objects {
		w[r.Intn(slots)]++
	}
	return w
}

// zipf draws each slot's load for namespaces of Zipf-distributed sizes
// (exponent 0.8) hashed into slots, as ByNamespace spreads them when a
// few namespaces are hot.
func zipf(r *rand.Rand, slots, namespaces int) []float64 {
	w := make([]float64, slots)
	for k := 1; k <= namespaces; k++ {
		w[r.Intn(slots)] += 1000 * math.Pow(float64(k), -0.8)
	}
	return w
}

// Balance keeps every member's count of slots, so that Assign keeps its
// result, and is a fixed point with Assign: the members agree on it and
// stop moving slots once there. It brings the busiest member within a few
// percent of the least it can carry (the mean, or a slot heavier than
// that with the lightest slots beside it) where Assign alone, by count,
// leaves it 4–20% over with loads spread as a uniform hash of objects
// spreads them, and far more with a few hot namespaces (issue 52).
func TestBalanceEvensLoadsAndIsAFixedPoint(t *testing.T) {
	r := rand.New(rand.NewSource(52))
	for _, tc := range []struct {
		name    string
		weights func() []float64
		within  float64 // the busiest member's load over its floor, at most
	}{
		{"uniform objects", func() []float64 { return poisson(r, 64, 1800) }, 1.02},
		{"hot namespaces", func() []float64 { return zipf(r, 64, 100) }, 1.05},
	} {
		for _, n := range []int{2, 3, 5, 8} {
			t.Run(fmt.Sprintf("%s/members=%d", tc.name, n), func(t *testing.T) {
				worst, worstAssign, worstFloor := 0.0, 0.0, 0.0
				for range 40 {
					ms, w := identities(r, n), tc.weights()
					counted := Assign(ms, 64, nil)
					out := Balance(counted, w, DefaultBalanceTolerance)
					balanced(t, "after Balance", ms, out)
					if again := Balance(Assign(ms, 64, out), w, DefaultBalanceTolerance); moved(out, again) != 0 {
						t.Fatalf("Balance∘Assign of its own result moves %d slots", moved(out, again))
					}
					_, b := loadsOf(ms, out, w)
					_, a := loadsOf(ms, counted, w)
					f := floor(w, n)
					worst, worstAssign, worstFloor = max(worst, b/f), max(worstAssign, a/f), max(worstFloor, f)
				}
				t.Logf("busiest over its floor: %.3f balanced, %.3f by count alone (floors up to %.3f× the mean)", worst, worstAssign, worstFloor)
				if worst > tc.within {
					t.Errorf("busiest member at %.3f× its floor after Balance, want ≤ %.2f", worst, tc.within)
				}
			})
		}
	}
}

// A rebalance in flight (slots released but not yet claimed, or claimed
// by both) heads for the same target, or settles on one within a few
// rounds: the members never chase each other's moves.
func TestBalanceSettlesMidMove(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for range 100 {
		ms, w := identities(r, 5), poisson(r, 64, 1800)
		cur := Assign(ms, 64, nil) // balanced by count: what runs before loads are known
		rounds := 0
		for ; rounds < 20; rounds++ {
			target := BalanceFrom(Assign(ms, 64, cur), cur, w, DefaultBalanceTolerance)
			if moved(cur, target) == 0 {
				break
			}
			for s := range cur {
				if cur[s] == target[s] {
					continue
				}
				switch r.Intn(3) {
				case 0: // not released yet
				case 1:
					cur[s] = "" // claimed by both, or by none
				case 2:
					cur[s] = target[s]
				}
			}
		}
		if rounds == 20 {
			t.Fatalf("still moving after 20 rounds")
		}
	}
}

// After a member's death, BalanceFrom spreads the dead member's slots by
// their loads and moves few of the survivors' own: each such move is a
// gap in its slot's service beside the dead one's. Balance, which sees
// only where Assign put the orphans by count, evens the loads by
// swapping the survivors' slots too. Both leave the busiest survivor as
// near the mean, and BalanceFrom's result is a fixed point.
func TestBalanceAfterADeathMovesFewOfTheSurvivorsSlots(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	const draws = 200
	for _, tc := range []struct {
		name    string
		weights func() []float64
		most    float64 // BalanceFrom's mean moves of survivors' slots, at most
	}{
		{"uniform objects", func() []float64 { return poisson(r, 64, 1800) }, 0.5},
		{"hot namespaces", func() []float64 { return zipf(r, 64, 100) }, 2.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var from, plain, busiestFrom, busiestPlain float64
			for range draws {
				ms, w := identities(r, 5), tc.weights()
				cur := Balance(Assign(ms, 64, nil), w, DefaultBalanceTolerance)
				dead := ms[r.Intn(len(ms))]
				live := slices.DeleteFunc(slices.Clone(ms), func(m string) bool { return m == dead })
				owner := Assign(live, 64, cur)
				a, b := BalanceFrom(owner, cur, w, DefaultBalanceTolerance), Balance(owner, w, DefaultBalanceTolerance)
				balanced(t, "after BalanceFrom", live, a)
				if again := BalanceFrom(Assign(live, 64, a), a, w, DefaultBalanceTolerance); moved(a, again) != 0 {
					t.Fatalf("BalanceFrom∘Assign of its own result moves %d slots", moved(a, again))
				}
				for s, o := range cur {
					if o == dead {
						continue
					}
					if a[s] != o {
						from++
					}
					if b[s] != o {
						plain++
					}
				}
				_, x := loadsOf(live, a, w)
				_, y := loadsOf(live, b, w)
				busiestFrom, busiestPlain = max(busiestFrom, x), max(busiestPlain, y)
			}
			from, plain = from/draws, plain/draws
			t.Logf("survivors' own slots moved, mean of %d deaths among 5: %.2f by BalanceFrom, %.2f by Balance; busiest survivor over the mean at most %.4f and %.4f",
				draws, from, plain, busiestFrom, busiestPlain)
			if from > tc.most || from >= plain {
				t.Errorf("BalanceFrom moved %.2f of the survivors' slots a death, want at most %.1f and fewer than Balance's %.2f", from, tc.most, plain)
			}
			if busiestFrom > busiestPlain+0.01 {
				t.Errorf("BalanceFrom leaves the busiest survivor at %.4f× the mean, Balance at %.4f×", busiestFrom, busiestPlain)
			}
		})
	}
}

// Balance leaves owner as it is when it cannot weigh the slots.
func TestBalanceWithoutUsableWeights(t *testing.T) {
	owner := []string{"a", "a", "b", "b"}
	for _, w := range [][]float64{nil, {1, 2, 3}, {0, 0, 0, 0}, {1, math.NaN(), 1, 1}, {1, -1, 1, 1}} {
		if got := Balance(owner, w, DefaultBalanceTolerance); !slices.Equal(got, owner) {
			t.Errorf("weights %v: got %v, want it unchanged", w, got)
		}
	}
	if got := Balance([]string{"a", "a"}, []float64{5, 1}, 0); !slices.Equal(got, []string{"a", "a"}) {
		t.Errorf("one member: got %v", got)
	}
	// Two members, two heavy slots on one: one swap evens them.
	got := Balance([]string{"a", "a", "b", "b"}, []float64{10, 10, 1, 1}, DefaultBalanceTolerance)
	if l, _ := loadsOf([]string{"a", "b"}, got, []float64{10, 10, 1, 1}); l["a"] != 11 || l["b"] != 11 {
		t.Errorf("got %v: loads %v, want 11 each", got, l)
	}
}

// A slot's load comes from the member whose claim alone holds it, else
// from any member reporting it, else as last known, else the mean.
func TestWeightsFromReports(t *testing.T) {
	remembered := map[int]float64{}
	reports := map[string]map[int]float64{
		"a": {0: 4, 1: 9},
		"b": {1: 2, 2: 6},
	}
	got := weights(reports, []string{"a", "b", "", ""}, remembered)
	if want := []float64{4, 2, 6, 4}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Slot 2's holder stopped reporting it (it moved): its last load holds.
	got = weights(map[string]map[int]float64{"a": {0: 4}}, []string{"a", "b", "", ""}, remembered)
	if want := []float64{4, 2, 6, 4}; !slices.Equal(got, want) {
		t.Fatalf("after a move: got %v, want %v", got, want)
	}
	if got := weights(nil, []string{"a", "b"}, map[int]float64{}); got != nil {
		t.Fatalf("no loads known: got %v, want nil", got)
	}
}

// The meter reports rates: the share of a worker each slot kept busy.
// Steady work reads the same however long the meter has run (a decayed
// sum would keep growing), every slot decays alike while idle, a seed
// reads back as given, and the annotation parses back; bad annotations
// are errors.
func TestMeterAndLoadAnnotation(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rates := func(m *meter, held []int, at time.Time) map[int]float64 {
		t.Helper()
		got, err := parseLoad(m.format(held, at), 8)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 0.01*want }
	m := newMeter(time.Minute)
	// Slot 3: half a worker busy; slot 5: a quarter, for ten minutes.
	var at time.Time
	for i := range 6000 {
		at = t0.Add(time.Duration(i+1) * 100 * time.Millisecond)
		m.observe(3, 50*time.Millisecond, at)
		m.observe(5, 25*time.Millisecond, at)
		if i == 299 { // thirty seconds in
			if got := rates(m, []int{3, 5}, at); !near(got[3], 0.5) || !near(got[5], 0.25) {
				t.Errorf("after 30 s of steady work: %v, want 3=0.5, 5=0.25", got)
			}
		}
	}
	if got := rates(m, []int{3, 5}, at); !near(got[3], 0.5) || !near(got[5], 0.25) {
		t.Errorf("after 10 min of steady work: %v, want 3=0.5, 5=0.25", got)
	}
	m.seed(7, 0.4, at)
	if got := rates(m, []int{7}, at); !near(got[7], 0.4) {
		t.Errorf("seeded 0.4: %v", got)
	}
	idle := rates(m, []int{3, 5, 7}, at.Add(time.Minute))
	if !near(idle[3], 0.25) || !near(idle[5], 0.125) || !near(idle[7], 0.2) {
		t.Errorf("a minute idle: %v, want every rate halved", idle)
	}
	if got, _ := parseLoad("3=1,9=2", 8); len(got) != 1 {
		t.Errorf("a slot outside 0..slots-1 was kept: %v", got)
	}
	for _, bad := range []string{"3", "x=1", "3=-1", "3=NaN", "3=+Inf", "3=1,,4=2"} {
		if _, err := parseLoad(bad, 8); err == nil {
			t.Errorf("parseLoad(%q): no error", bad)
		}
	}
	m.keep([]int{3})
	if got := rates(m, []int{3, 5}, at); got[5] != 0 || got[3] == 0 {
		t.Errorf("after keep(3): %v", got)
	}
	// A member that has just started: its first reconcile is read over
	// a second at least, not as a worker kept busy many times over.
	fresh := newMeter(time.Minute)
	fresh.observe(1, 50*time.Millisecond, t0.Add(100*time.Millisecond))
	if got := rates(fresh, []int{1}, t0.Add(100*time.Millisecond)); got[1] > 0.051 {
		t.Errorf("one 50 ms reconcile 100 ms after start reads %v workers", got[1])
	}
}

// A slot gained before any work, seeded with its previous holder's rate
// of 0, does not start the meter's window: else a member that gained a
// slot while the group formed, seconds before the work began, reads its
// steady work low for half-lives, and the first plan moves slots to even
// loads that are even. Seeded 5 s early, with a 3 s half-life, 3 s of
// work read 0.58 of the truth. And a member that gains a slot as it
// starts, seeded with the rate its previous holder measured, reads that
// rate while the work goes on at it, not the seed and its own first
// work both (here 1.56 times the rate half a second in, 1.27 a second
// in).
func TestMeterStartsWithTheWork(t *testing.T) {
	t0 := time.Unix(1000, 0)
	early, onTime, joiner := newMeter(3*time.Second), newMeter(3*time.Second), newMeter(3*time.Second)
	early.seed(2, 0, t0)
	joiner.seed(2, 2, t0.Add(5*time.Second))
	read := func(m *meter, at time.Time) float64 {
		t.Helper()
		got, err := parseLoad(m.format([]int{2}, at), 8)
		if err != nil {
			t.Fatal(err)
		}
		return got[2]
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 0.03*want }
	var at time.Time
	for i := range 60 {
		at = t0.Add(5*time.Second + time.Duration(i+1)*50*time.Millisecond)
		for _, m := range []*meter{early, onTime, joiner} {
			m.observe(2, 100*time.Millisecond, at)
		}
		if i%10 == 9 {
			if got := read(joiner, at); !near(got, 2) {
				t.Errorf("%v after gaining a slot seeded at 2 workers, with work at 2 since: reads %v", at.Sub(t0)-5*time.Second, got)
			}
		}
	}
	if got, want := read(early, at), read(onTime, at); !near(got, want) {
		t.Errorf("3 s of work after a seed of 0 five seconds before it reads %v workers; without the seed %v", got, want)
	}
}

// Loads too small to be work (a resync's no-op reconciles) are not
// balanced on: the mean member must keep a tenth of a worker busy.
func TestBusyNeedsATenthOfAWorker(t *testing.T) {
	if busy([]float64{0.09, 0.09}, 2) {
		t.Error("busy at 0.09 of a worker per member")
	}
	if !busy([]float64{0.2, 0}, 2) {
		t.Error("not busy at 0.1 of a worker per member")
	}
	if busy(nil, 2) || busy([]float64{1}, 0) {
		t.Error("busy without loads or members")
	}
}

// Balancing starts only when the busiest member is more than the trigger
// over the mean, so measures that wobble within it move no slot.
func TestUnevenNeedsTheTrigger(t *testing.T) {
	owner := []string{"a", "a", "b", "b"}
	for _, c := range []struct {
		weights []float64
		want    bool
	}{
		{[]float64{60, 43.1, 50, 46.9}, true},  // a: 103.1 against a mean of 100
		{[]float64{60, 42.9, 50, 47.1}, false}, // a: 102.9
		{[]float64{0, 0, 0, 0}, false},
		{[]float64{1, 2, 3}, false}, // not one weight per slot
	} {
		if got := Uneven(owner, c.weights, DefaultBalanceTrigger); got != c.want {
			t.Errorf("Uneven(%v, %v) = %v, want %v", owner, c.weights, got, c.want)
		}
	}
	if Uneven([]string{"a", "a", "", ""}, []float64{9, 1, 0, 0}, DefaultBalanceTrigger) {
		t.Error("uneven with one member")
	}
	// Every member busy during a burst: each member's load grows alike
	// while the shares of its slots shift; nothing is uneven.
	if Uneven(owner, []float64{80, 20, 10, 90}, DefaultBalanceTrigger) {
		t.Error("uneven with equal member loads")
	}
}

// A plan carries one load per slot, and reads back as written; a plan
// that leaves out a slot or does not parse is refused.
func TestPlanAnnotation(t *testing.T) {
	plan := []float64{0.5, 0, 12.3, 0.0042}
	got, err := parsePlan(formatPlan(plan), 4)
	if err != nil || !slices.Equal(got, plan) {
		t.Fatalf("round trip of %v: %v, %v", plan, got, err)
	}
	if got, err := parsePlan("", 4); got != nil || err != nil {
		t.Errorf("no plan: %v, %v", got, err)
	}
	for _, bad := range []string{"0=1,1=1,2=1", "0=1,1=1,2=1,3=x", "0=1,1=1,2=1,3=-1"} {
		if _, err := parsePlan(bad, 4); err == nil {
			t.Errorf("parsePlan(%q): no error", bad)
		}
	}
}

// A change of members aims at one target in every view while it lands:
// balanced from the anchor (the assignment before the change, the slots
// of members gone blanked), each view halfway through a death or a join
// gives the target of the change's first view. Balanced from each view's
// claims instead, views halfway through aim elsewhere and move slots
// that had just moved.
func TestAChangeAimsAtOneTarget(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	t0 := time.Unix(1000, 0)
	target := func(a *anchor, cur, live []string, w []float64, at time.Time) []string {
		from := cur
		if a != nil {
			from = a.from(cur, live, at, time.Minute)
		}
		return BalanceFrom(Assign(live, 64, from), from, w, DefaultBalanceTolerance)
	}
	for _, change := range []string{"death", "join"} {
		t.Run(change, func(t *testing.T) {
			var views, astray, astrayPlain int
			for range 100 {
				ms, w := identities(r, 5), zipf(r, 64, 100)
				before, live := ms[:4], ms[:4]
				switch change {
				case "death":
					before = ms
				case "join":
					live = ms
				}
				rest := Balance(Assign(before, 64, nil), w, DefaultBalanceTolerance)
				var a anchor
				a.from(rest, before, t0, time.Minute)
				a.settle(rest, rest)
				cur := slices.Clone(rest)
				for s, o := range cur {
					if !slices.Contains(live, o) {
						cur[s] = ""
					}
				}
				want := target(&a, cur, live, w, t0)
				// Land the moves in a random order, each in two steps:
				// claimed by two or by none, then by its new holder.
				var moving []int
				for s := range want {
					if want[s] != rest[s] {
						moving = append(moving, s)
					}
				}
				r.Shuffle(len(moving), func(i, j int) { moving[i], moving[j] = moving[j], moving[i] })
				for _, s := range moving {
					for _, step := range []string{"", want[s]} {
						cur[s] = step
						views++
						if got := target(&a, cur, live, w, t0.Add(time.Second)); !slices.Equal(got, want) {
							astray++
						}
						if got := target(nil, cur, live, w, t0); !slices.Equal(got, want) {
							astrayPlain++
						}
					}
				}
				if !slices.Equal(cur, want) {
					t.Fatalf("landed %v, want %v", cur, want)
				}
				a.settle(cur, target(&a, cur, live, w, t0.Add(2*time.Second)))
				if !slices.Equal(a.owner, want) || !a.since.IsZero() {
					t.Fatalf("after the change landed, the anchor is %v since %v; want the target, and no change under way", a.owner, a.since)
				}
			}
			t.Logf("%s: of %d views halfway through, %d aim elsewhere balanced from the anchor, %d balanced from their claims", change, views, astray, astrayPlain)
			if astray > 0 {
				t.Errorf("%d views of %d halfway through a %s aim elsewhere than its first view", astray, views, change)
			}
		})
	}
}

// A change that has not landed within the limit is given up: its views
// may differ between members. From then on the claims are balanced
// from, until they rest again.
func TestAnAnchorIsGivenUp(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var a anchor
	rest := []string{"a", "a", "b", "b", "c", "c"}
	if got := a.from(rest, []string{"a", "b", "c"}, t0, time.Minute); !slices.Equal(got, rest) || a.owner == nil {
		t.Fatalf("a first view with every slot claimed: from %v, anchor %v; want the claims, and them as the anchor", got, a.owner)
	}
	cur := []string{"a", "a", "b", "", "", ""}
	if got := a.from(cur, []string{"a", "b"}, t0.Add(time.Second), time.Minute); !slices.Equal(got, []string{"a", "a", "b", "b", "", ""}) {
		t.Errorf("c died: from %v, want the anchor with c's slots blanked", got)
	}
	if got := a.from(cur, []string{"a", "b"}, t0.Add(62*time.Second), time.Minute); !slices.Equal(got, cur) || a.owner != nil {
		t.Errorf("61 s into the change: from %v, anchor %v; want the claims, and no anchor", got, a.owner)
	}
}
