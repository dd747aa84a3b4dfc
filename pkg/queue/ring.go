package queue

import "iter"

// A ready node sits in two rings at once: its tenant's line and the age ring.
// Each ring position the node holds is kept in node.pos, indexed by slot.
type ringSlot int

const (
	lineSlot ringSlot = iota // the tenant's line
	ageSlot                  // the age ring
)

// ring is a first-in, first-out sequence of nodes in a circular buffer of
// pointers. Any node can be removed in O(1) by leaving a hole (nil) in its
// slot, found through node.pos, so that removing a node touches neither its
// neighbours nor any other node: draining a big backlog reads the buffer
// sequentially and each node once, where a linked list would also touch the
// node's neighbours, cold in cache.
//
// Positions are absolute and wrap around uint32; the slot of position p is
// buf[p&(len(buf)-1)], len(buf) being a power of two (and far below 2^32).
//
// Invariants: positions head to tail-1 hold live nodes and holes, and live
// counts the live ones; a live node's pos[slot] is its position; the slot at
// head is live unless the ring is empty (head == tail), so front is O(1);
// every slot outside head to tail-1 is nil. A ring that fills up is
// compacted if at most half of it is live and doubled otherwise, so its
// buffer stays under four times its most live nodes and holes cost
// amortised O(1) per push. A buffer does not shrink when its ring empties,
// as the items map does not: a queue keeps the room of its biggest backlog,
// eight bytes per key in a tenant's line and eight in the age ring, so that
// the next backlog allocates nothing.
type ring[K comparable] struct {
	buf        []*node[K]
	head, tail uint32
	live       int
	slot       ringSlot
}

func (r *ring[K]) mask() uint32 { return uint32(len(r.buf) - 1) }

// len returns the number of live nodes.
func (r *ring[K]) len() int { return r.live }

// front returns the first live node, or nil if there is none.
func (r *ring[K]) front() *node[K] {
	if r.head == r.tail {
		return nil
	}
	return r.buf[r.head&r.mask()]
}

func (r *ring[K]) pushBack(n *node[K]) {
	if int(r.tail-r.head) == len(r.buf) {
		r.makeRoom()
	}
	n.pos[r.slot] = r.tail
	r.buf[r.tail&r.mask()] = n
	r.tail++
	r.live++
}

// remove takes n, which the ring holds, out of it.
func (r *ring[K]) remove(n *node[K]) {
	p := n.pos[r.slot]
	r.buf[p&r.mask()] = nil
	r.live--
	if p == r.head {
		r.skipHoles()
	}
}

// skipHoles moves head past the holes at the front. Each hole is passed
// once, so this is amortised O(1) per remove.
func (r *ring[K]) skipHoles() {
	m := r.mask()
	for r.head != r.tail && r.buf[r.head&m] == nil {
		r.head++
	}
}

// makeRoom compacts a full ring if at most half of it is live, which takes
// at least half a buffer of removes since it last grew or was compacted, and
// doubles it otherwise.
func (r *ring[K]) makeRoom() {
	if len(r.buf) > 0 && r.live <= len(r.buf)/2 {
		r.compact()
		return
	}
	m := r.mask()
	buf := make([]*node[K], max(8, 2*len(r.buf)))
	nm := uint32(len(buf) - 1)
	// Positions do not change, so the nodes' pos stay right.
	for p := r.head; p != r.tail; p++ {
		buf[p&nm] = r.buf[p&m]
	}
	r.buf = buf
}

// compact closes the holes, moving live nodes towards head.
func (r *ring[K]) compact() {
	m := r.mask()
	w := r.head
	for p := r.head; p != r.tail; p++ {
		if n := r.buf[p&m]; n != nil {
			r.buf[p&m] = nil
			r.buf[w&m] = n
			n.pos[r.slot] = w
			w++
		}
	}
	r.tail = w
}

// all yields the live nodes, first to last.
func (r *ring[K]) all() iter.Seq[*node[K]] {
	return func(yield func(*node[K]) bool) {
		m := r.mask()
		for p := r.head; p != r.tail; p++ {
			if n := r.buf[p&m]; n != nil && !yield(n) {
				return
			}
		}
	}
}
