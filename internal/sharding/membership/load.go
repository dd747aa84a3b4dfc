package membership

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// AnnotationLoad holds, in a member's Lease, the load it measured of each
// slot it holds (Options.LoadHalfLife): "slot=load" pairs in ascending
// slot order joined by commas, each load the share of one worker that the
// slot's reconciles kept busy, averaged with weights that halve every
// half-life, to three significant digits.
const AnnotationLoad = "sharding.opkit.dev/load"

// AnnotationPlan holds, in the Lease of the group's planner (the live
// member of lowest identity), the loads every member balances on: one
// "slot=load" pair for each slot, as AnnotationLoad. Members that each
// balanced on their own view would each read the others' loads as of a
// different renewal, and, the loads moving between renewals, would each
// aim at a different assignment and move slots back and forth. On one
// plan they all compute the same assignment (Balance's result is a fixed
// point). The planner renews the plan only while slots rest and, on its
// fresh view, the busiest member has been more than
// DefaultBalanceTrigger over the mean for a whole half-life.
const AnnotationPlan = "sharding.opkit.dev/plan"

// formatPlan returns AnnotationPlan's value for loads, one per slot.
func formatPlan(loads []float64) string {
	parts := make([]string, len(loads))
	for s, w := range loads {
		parts[s] = strconv.Itoa(s) + "=" + strconv.FormatFloat(w, 'g', 3, 64)
	}
	return strings.Join(parts, ",")
}

// parsePlan reads AnnotationPlan: nil if v is empty, or an error if it
// does not parse or leaves out a slot.
func parsePlan(v string, slots int) ([]float64, error) {
	if v == "" {
		return nil, nil
	}
	byslot, err := parseLoad(v, slots)
	if err != nil {
		return nil, err
	}
	if len(byslot) != slots {
		return nil, fmt.Errorf("parse plan: %d of %d slots", len(byslot), slots)
	}
	out := make([]float64, slots)
	for s, w := range byslot {
		out[s] = w
	}
	return out, nil
}

// meter measures the work of each slot's reconciles as a rate: the
// seconds of work, decayed exponentially so that work done one half-life
// ago counts half, over the seconds of time decayed alike since the meter
// began. A rate rather than a sum, so that two members' measures of
// steady work agree however long each has measured it, and a member that
// reads another's report one renewal late reads nearly what it would
// have read on time: a decayed sum grows while the work lasts, and
// members comparing sums read at different moments see loads that are
// not there and move slots for them. It is safe for concurrent use.
type meter struct {
	halfLife time.Duration
	since    time.Time // the first work observed or seeded; zero before

	mu    sync.Mutex
	load  map[int]decayed
	seeds map[int]seeded
}

// decayed is a load as of a time.
type decayed struct {
	v  float64
	at time.Time
}

// seeded is a slot's rate as its previous holder measured it, when this
// member gained it.
type seeded struct {
	rate float64
	at   time.Time
}

// as returns d's load decayed to now.
func (d decayed) as(now time.Time, halfLife time.Duration) float64 {
	if dt := now.Sub(d.at); dt > 0 {
		return d.v * math.Exp2(-float64(dt)/float64(halfLife))
	}
	return d.v
}

func newMeter(halfLife time.Duration) *meter {
	return &meter{halfLife: halfLife, load: map[int]decayed{}, seeds: map[int]seeded{}}
}

// span returns d's seconds decayed as work is: what steady work of one
// worker, done over the last d, sums to now.
func (m *meter) span(d time.Duration) float64 {
	return m.halfLife.Seconds() / math.Ln2 * (1 - math.Exp2(-float64(max(d, 0))/float64(m.halfLife)))
}

// window returns the seconds of time since the meter's first observation
// or seed of work, decayed as work is, at now: a rate is a decayed sum
// over it. Counting from the first work, not from the member's start,
// steady work reads the same on a member that started long before it
// and on one that started with it; a slot gained before any work, seeded
// with a rate of 0, does not start it. The window counts at least a
// second (or a tenth of the half-life, if less), so that the first
// reconciles do not read as a worker kept busy many times over, and no
// longer, so that a rate reads true within a second of the work
// starting: a slot whose load was reported and seeded while the rates
// still rose would look lighter than it is. m.mu is held.
func (m *meter) window(now time.Time) float64 {
	d := m.floor()
	if !m.since.IsZero() {
		d = max(now.Sub(m.since), d)
	}
	return m.span(d)
}

// floor is the least time window counts: a second, or a tenth of the
// half-life if less. Rates settle that long after the work starts.
func (m *meter) floor() time.Duration { return min(m.halfLife/10, time.Second) }

// observe adds took, one reconcile of slot ending at now.
func (m *meter) observe(slot int, took time.Duration, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.since.IsZero() {
		m.since = now
	}
	m.load[slot] = decayed{v: m.load[slot].as(now, m.halfLife) + took.Seconds(), at: now}
}

// seed sets slot's rate, gained at now, to what its previous holder
// measured, so that a moved slot does not look idle to the members while
// its new holder builds up its own measure. The seed stands for the work
// of the window before now, which this member did not see: steady work
// at that rate reads as that rate from now on, on a member that has
// measured for long and on one that starts measuring now alike.
func (m *meter) seed(slot int, rate float64, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.load, slot)
	if rate <= 0 {
		delete(m.seeds, slot)
		return
	}
	if m.since.IsZero() {
		m.since = now
	}
	m.seeds[slot] = seeded{rate: rate, at: now}
}

// keep drops the loads of slots not in held.
func (m *meter) keep(held []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for s := range m.load {
		if !slices.Contains(held, s) {
			delete(m.load, s)
		}
	}
	for s := range m.seeds {
		if !slices.Contains(held, s) {
			delete(m.seeds, s)
		}
	}
}

// format returns AnnotationLoad's value for held at now. A seeded slot's
// sum holds, beside the work observed since the seed, the seed's rate
// over the rest of the window: the part of it before the seed.
func (m *meter) format(held []int, now time.Time) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.window(now)
	parts := make([]string, 0, len(held))
	for _, s := range slices.Sorted(slices.Values(held)) {
		v := m.load[s].as(now, m.halfLife)
		if sd, ok := m.seeds[s]; ok {
			v += sd.rate * max(w-m.span(now.Sub(sd.at)), 0)
		}
		parts = append(parts, strconv.Itoa(s)+"="+strconv.FormatFloat(v/w, 'g', 3, 64))
	}
	return strings.Join(parts, ",")
}

// MinBusy is the least mean load of the members, as the share of one
// worker kept busy, at which they balance by load. Below it the loads
// measure noise (a resync's reconciles that find nothing to do take
// microseconds, and vary as much) rather than work, and swapping slots on
// noise costs relists for nothing.
const MinBusy = 0.1

// busy reports whether loads, summed over members, are worth balancing:
// their mean reaches MinBusy.
func busy(loads []float64, members int) bool {
	if loads == nil || members == 0 {
		return false
	}
	total := 0.0
	for _, w := range loads {
		total += w
	}
	return total/float64(members) >= MinBusy
}

// parseLoad reads AnnotationLoad; slots outside 0..slots-1 are left out.
// A value that does not parse, or a load that is negative or not finite,
// is an error.
func parseLoad(v string, slots int) (map[int]float64, error) {
	if v == "" {
		return nil, nil
	}
	out := map[int]float64{}
	for _, p := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(p, "=")
		s, err := strconv.Atoi(k)
		if !ok || err != nil {
			return nil, fmt.Errorf("parse load %q: want slot=load", p)
		}
		w, err := strconv.ParseFloat(val, 64)
		if err != nil || w < 0 || math.IsInf(w, 0) || math.IsNaN(w) {
			return nil, fmt.Errorf("parse load %q: want a finite load of 0 or more", p)
		}
		if s >= 0 && s < slots {
			out[s] = w
		}
	}
	return out, nil
}

// weights returns, for Balance, each slot's load in this view: as
// reported by the member whose claim alone holds it (current), else by
// any member (the highest), else as last known (remembered), else the
// mean of the known ones. It updates remembered with what was reported.
// It returns nil when no slot's load is known.
func weights(reports map[string]map[int]float64, current []string, remembered map[int]float64) []float64 {
	for s, o := range current {
		if w, ok := reports[o][s]; ok && o != "" {
			remembered[s] = w
			continue
		}
		found := false
		for _, r := range reports {
			if w, ok := r[s]; ok && (!found || w > remembered[s]) {
				remembered[s], found = w, true
			}
		}
	}
	if len(remembered) == 0 {
		return nil
	}
	out := make([]float64, len(current))
	sum, known := 0.0, 0
	for s := range out {
		if w, ok := remembered[s]; ok {
			sum += w
			known++
		}
	}
	for s := range out {
		if w, ok := remembered[s]; ok {
			out[s] = w
		} else {
			out[s] = sum / float64(known)
		}
	}
	return out
}
