package queue

// A node sits in up to two intrusive lists at once, each through its own
// link slot, so moving a node costs no allocation and removing one is O(1).
type linkSlot int

const (
	// lineSlot links a ready node into its tenant's line, or a handed-out
	// node into the processing list: a node is never in both.
	lineSlot linkSlot = iota
	// ageSlot links a ready node into the age list.
	ageSlot
)

type link[K comparable] struct{ prev, next *node[K] }

// list is an intrusive doubly linked list of nodes through one link slot.
// Its zero value is empty.
type list[K comparable] struct{ head, tail *node[K] }

func (l *list[K]) pushBack(n *node[K], s linkSlot) {
	n.links[s] = link[K]{prev: l.tail}
	if l.tail != nil {
		l.tail.links[s].next = n
	} else {
		l.head = n
	}
	l.tail = n
}

func (l *list[K]) remove(n *node[K], s linkSlot) {
	lk := &n.links[s]
	if lk.prev != nil {
		lk.prev.links[s].next = lk.next
	} else {
		l.head = lk.next
	}
	if lk.next != nil {
		lk.next.links[s].prev = lk.prev
	} else {
		l.tail = lk.prev
	}
	*lk = link[K]{}
}
