package membership

import (
	"slices"
	"sort"
)

// DefaultBalanceTolerance is the tolerance decide passes to Balance: a
// swap must lower the busier member's load by more than 1% of the mean
// member's load. Each swap moves two slots, and each move costs the two
// members a relist of their share, so gains smaller than that are left.
const DefaultBalanceTolerance = 0.01

// DefaultBalanceTrigger is when decide balances at all: the busiest
// member's load must exceed the mean member's by more than 3%. Below it
// the assignment stands, so loads that wobble (a burst that keeps every
// member busy makes their measures grow alike, whatever each slot's
// share of the work) do not move slots back and forth; once triggered,
// Balance swaps down to DefaultBalanceTolerance.
const DefaultBalanceTrigger = 0.03

// Uneven reports whether the busiest member in owner carries more than
// (1 + trigger) times the mean member's load, weights[s] being the load
// of slot s. It is false when weights does not have one entry per slot
// or adds up to zero, and when fewer than two members own slots.
func Uneven(owner []string, weights []float64, trigger float64) bool {
	if len(weights) != len(owner) {
		return false
	}
	loads := map[string]float64{}
	total := 0.0
	for s, o := range owner {
		if o != "" {
			loads[o] += weights[s]
			total += weights[s]
		}
	}
	if len(loads) < 2 || !(total > 0) {
		return false
	}
	mean := total / float64(len(loads))
	for _, l := range loads {
		if l > (1+trigger)*mean {
			return true
		}
	}
	return false
}

// maxSwaps bounds Balance's swaps per slot; each swap strictly lowers the
// members' loads sorted from the highest, so it ends sooner in practice.
const maxSwaps = 4

// Balance evens out the members' loads in owner (from Assign) by swapping
// slots between members, weights[s] being the load of slot s: while some
// swap of a slot of the busiest member for a lighter slot of another
// lowers the busiest member's load by more than tolerance times the mean
// member's load, it makes the swap that lowers it most. Swaps keep every
// member's count of slots, so Assign keeps them all the next time round
// (each member holds its share), and Balance finds no further swap in its
// own result: the pair is a fixed point, and every member computing it
// from the same view agrees. Ties break to the lower identity, then the
// lower slots.
//
// Balance returns owner itself when weights does not have one entry per
// slot, any weight is negative or not a number, the weights add up to
// zero, or fewer than two members own slots.
func Balance(owner []string, weights []float64, tolerance float64) []string {
	return BalanceFrom(owner, nil, weights, tolerance)
}

// BalanceFrom is Balance for an owner that moves slots away from current,
// their holders now ("" where none or several: a slot that moves
// whoever gets it), as Assign's result does when a member joins or
// leaves: among the swaps that lower the busiest member's load by more
// than the tolerance, it takes one that moves fewest slots beyond those
// owner moves already, and the one that lowers the load most among
// those. A member's death then spreads its slots by their loads, rather
// than moving the survivors' own slots to even out where Assign put
// them by count; every move is a gap in a slot's service. It stops where
// Balance does, so its result is a fixed point as Balance's is. With
// current nil, or owner itself, it is Balance.
func BalanceFrom(owner, current []string, weights []float64, tolerance float64) []string {
	if len(weights) != len(owner) || current != nil && len(current) != len(owner) {
		return owner
	}
	total := 0.0
	for _, w := range weights {
		if !(w >= 0) { // NaN too
			return owner
		}
		total += w
	}
	var members []string
	for _, o := range owner {
		if o != "" {
			members = append(members, o)
		}
	}
	slices.Sort(members)
	members = slices.Compact(members)
	if total == 0 || len(members) < 2 {
		return owner
	}
	out := slices.Clone(owner)
	b := newBalancer(out, members, weights)
	b.current = current
	minGain := tolerance * total / float64(len(members))
	for range maxSwaps * len(out) {
		if !b.swapBusiest(minGain) {
			break
		}
	}
	return out
}

// balancer is Balance's state: owner is changed in place.
type balancer struct {
	owner   []string
	current []string // BalanceFrom's; nil for Balance
	members []string
	weights []float64
	slots   [][]int // each member's slots, ascending
	loads   []float64
}

// moves returns how many of the slots a and s move off current if a goes
// to member x and s to member y; 0 without current.
func (b *balancer) moves(a int, x string, s int, y string) int {
	if b.current == nil {
		return 0
	}
	n := 0
	if b.current[a] != x {
		n++
	}
	if b.current[s] != y {
		n++
	}
	return n
}

func newBalancer(owner, members []string, weights []float64) *balancer {
	b := &balancer{owner: owner, members: members, weights: weights,
		slots: make([][]int, len(members)), loads: make([]float64, len(members))}
	index := make(map[string]int, len(members))
	for i, m := range members {
		index[m] = i
	}
	for s, o := range owner {
		if i, ok := index[o]; ok {
			b.slots[i] = append(b.slots[i], s)
			b.loads[i] += weights[s]
		}
	}
	return b
}

// swapBusiest makes the swap that lowers the busiest member's load by
// more than minGain, with the fewest moves off current that such a swap
// adds, and the most among those; false if there is none.
func (b *balancer) swapBusiest(minGain float64) bool {
	order := make([]int, len(b.members))
	for i := range order {
		order[i] = i
	}
	// Busiest first; equal loads in identity order.
	sort.SliceStable(order, func(x, y int) bool { return b.loads[order[x]] > b.loads[order[y]] })
	h := order[0]
	best, added, bh, bl, bother := 0.0, 0, -1, -1, -1
	for _, l := range order[1:] {
		for ai, a := range b.slots[h] {
			for bi, s := range b.slots[l] {
				d := b.weights[a] - b.weights[s]
				if d <= 0 {
					continue
				}
				gain := b.loads[h] - max(b.loads[h]-d, b.loads[l]+d)
				if gain <= minGain {
					continue
				}
				add := b.moves(a, b.members[l], s, b.members[h]) - b.moves(a, b.members[h], s, b.members[l])
				if bother < 0 || add < added || add == added && gain > best {
					best, added, bh, bl, bother = gain, add, ai, bi, l
				}
			}
		}
	}
	if bother < 0 {
		return false
	}
	a, s := b.slots[h][bh], b.slots[bother][bl]
	d := b.weights[a] - b.weights[s]
	b.owner[a], b.owner[s] = b.members[bother], b.members[h]
	b.slots[h][bh], b.slots[bother][bl] = s, a
	slices.Sort(b.slots[h])
	slices.Sort(b.slots[bother])
	b.loads[h] -= d
	b.loads[bother] += d
	return true
}
