package queue

import (
	"math/bits"
	"unsafe"
)

// changeTimes holds the change times of the nodes that have one (see
// Queue.changed): a hash table of open addressing, keyed by the node's
// address, in place of a Go map, whose insert, lookup and delete were a
// sixth of the lag metrics' cost an event in profiles of pkg/source's
// BenchmarkInformerUpdates. The zero value is empty. Not safe for
// concurrent use: the queue's lock guards it.
type changeTimes[K comparable] struct {
	// slots is a power of two long, at most half full, or nil. A node is
	// in the first slot from its home (see home) on, going round, that
	// holds it or is empty: no empty slot lies between a node and its home.
	slots []changeSlot[K]
	used  int
	shift uint // 64 - log2(len(slots))
}

type changeSlot[K comparable] struct {
	n  *node[K] // nil: empty
	at int64
}

// minChangeSlots is the table's size when its first node comes.
const minChangeSlots = 64

// home is the slot n's probe starts at. Nodes are 64-byte structs, so
// the low bits of their addresses are alike; Fibonacci hashing mixes the
// rest into the top bits.
func (t *changeTimes[K]) home(n *node[K]) int {
	return int((uint64(uintptr(unsafe.Pointer(n))) * 0x9E3779B97F4A7C15) >> t.shift)
}

// find returns n's slot, or the empty slot where it would go.
func (t *changeTimes[K]) find(n *node[K]) int {
	mask := len(t.slots) - 1
	i := t.home(n)
	for t.slots[i].n != nil && t.slots[i].n != n {
		i = (i + 1) & mask
	}
	return i
}

// get returns n's change time, and whether it has one.
func (t *changeTimes[K]) get(n *node[K]) (int64, bool) {
	if t.used == 0 {
		return 0, false
	}
	s := t.slots[t.find(n)]
	return s.at, s.n != nil
}

// set makes at n's change time.
func (t *changeTimes[K]) set(n *node[K], at int64) {
	if 2*(t.used+1) > len(t.slots) {
		t.grow()
	}
	i := t.find(n)
	if t.slots[i].n == nil {
		t.slots[i].n = n
		t.used++
	}
	t.slots[i].at = at
}

// take returns and forgets n's change time, 0 if it has none.
func (t *changeTimes[K]) take(n *node[K]) int64 {
	if t.used == 0 {
		return 0
	}
	i := t.find(n)
	if t.slots[i].n == nil {
		return 0
	}
	at := t.slots[i].at
	t.remove(i)
	return at
}

// remove empties slot i and moves back the nodes after it that could
// otherwise not be found, keeping the invariant on slots.
func (t *changeTimes[K]) remove(i int) {
	mask := len(t.slots) - 1
	for j := (i + 1) & mask; t.slots[j].n != nil; j = (j + 1) & mask {
		// The node at j may move to i if its home does not lie in
		// (i, j], going round.
		if h := t.home(t.slots[j].n); (j-h)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = changeSlot[K]{}
	t.used--
}

func (t *changeTimes[K]) grow() {
	old := t.slots
	size := max(minChangeSlots, 2*len(old))
	t.slots, t.used = make([]changeSlot[K], size), 0
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	for _, s := range old {
		if s.n != nil {
			t.set(s.n, s.at)
		}
	}
}

// all returns the nodes that have a change time.
func (t *changeTimes[K]) all() []*node[K] {
	var ns []*node[K]
	for _, s := range t.slots {
		if s.n != nil {
			ns = append(ns, s.n)
		}
	}
	return ns
}
