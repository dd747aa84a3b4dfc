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
// slot order joined by commas, each load in seconds of reconcile work
// decayed with the half-life, to three significant digits.
const AnnotationLoad = "sharding.opkit.dev/load"

// meter sums the work of each slot's reconciles, decayed exponentially so
// that work done one half-life ago counts half. Every slot decays at the
// same rate, so the ratios between slots, which is all Balance uses, do
// not change while the operator is idle. It is safe for concurrent use.
type meter struct {
	halfLife time.Duration

	mu   sync.Mutex
	load map[int]decayed
}

// decayed is a load as of a time.
type decayed struct {
	v  float64
	at time.Time
}

// as returns d's load decayed to now.
func (d decayed) as(now time.Time, halfLife time.Duration) float64 {
	if dt := now.Sub(d.at); dt > 0 {
		return d.v * math.Exp2(-float64(dt)/float64(halfLife))
	}
	return d.v
}

func newMeter(halfLife time.Duration) *meter {
	return &meter{halfLife: halfLife, load: map[int]decayed{}}
}

// observe adds took, one reconcile of slot ending at now.
func (m *meter) observe(slot int, took time.Duration, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.load[slot] = decayed{v: m.load[slot].as(now, m.halfLife) + took.Seconds(), at: now}
}

// seed sets slot's load, gained at now, to what its previous holder
// measured, so that a moved slot does not look idle to the members while
// its new holder builds up its own measure.
func (m *meter) seed(slot int, v float64, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.load[slot] = decayed{v: v, at: now}
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
}

// format returns AnnotationLoad's value for held at now.
func (m *meter) format(held []int, now time.Time) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	parts := make([]string, 0, len(held))
	for _, s := range slices.Sorted(slices.Values(held)) {
		v := m.load[s].as(now, m.halfLife)
		parts = append(parts, strconv.Itoa(s)+"="+strconv.FormatFloat(v, 'g', 3, 64))
	}
	return strings.Join(parts, ",")
}

// minBusy is the least mean load of the members, as the fraction of one
// worker kept busy throughout, at which they balance by load. Below it
// the loads measure noise (a resync's reconciles that find nothing to do
// take microseconds, and vary as much) rather than work, and swapping
// slots on noise costs relists for nothing.
const minBusy = 0.1

// busy reports whether loads, summed over members, are worth balancing:
// their mean reaches minBusy. A worker busy a fraction u of the time
// throughout holds a load of u × halfLife / ln 2.
func busy(loads []float64, members int, halfLife time.Duration) bool {
	if loads == nil || members == 0 {
		return false
	}
	total := 0.0
	for _, w := range loads {
		total += w
	}
	return total/float64(members) >= minBusy*halfLife.Seconds()/math.Ln2
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
