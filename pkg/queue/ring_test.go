package queue

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A ring keeps first-in, first-out order through holes, growth, compaction
// and the wrap-around of its positions.
func TestRing(t *testing.T) {
	for _, start := range []uint32{0, math.MaxUint32 - 20} {
		r := ring[int]{slot: ageSlot, head: start, tail: start}
		rng := rand.New(rand.NewPCG(1, uint64(start)))
		var want []*node[int] // the live nodes, first to last
		most := 0             // the most live nodes so far
		for i := range 5000 {
			if len(want) > 0 && rng.IntN(3) == 0 {
				// Remove the front half of the time, else any node.
				j := 0
				if rng.IntN(2) == 0 {
					j = rng.IntN(len(want))
				}
				r.remove(want[j])
				want = slices.Delete(want, j, j+1)
			} else {
				n := &node[int]{key: i}
				r.pushBack(n)
				want = append(want, n)
				most = max(most, len(want))
			}
			if err := r.check(); err != nil {
				t.Fatalf("start %d, step %d: %v", start, i, err)
			}
			if got := slices.Collect(r.all()); !slices.Equal(got, want) {
				t.Fatalf("start %d, step %d: order differs:\n%s", start, i, cmp.Diff(keysOf(want), keysOf(got)))
			}
			if len(want) > 0 && r.front() != want[0] {
				t.Fatalf("start %d, step %d: front is %d, want %d", start, i, r.front().key, want[0].key)
			}
			if len(r.buf) > max(8, 4*most) {
				t.Fatalf("start %d, step %d: buffer of %d for at most %d live nodes", start, i, len(r.buf), most)
			}
		}
	}
}

func keysOf(ns []*node[int]) []int {
	ks := make([]int, len(ns))
	for i, n := range ns {
		ks[i] = n.key
	}
	return ks
}
