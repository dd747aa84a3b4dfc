package queue

// list is an intrusive doubly linked list of nodes through node.link: the
// processing list, whose nodes were handed out recently and so are in cache.
// Its zero value is empty.
type list[K comparable] struct{ head, tail *node[K] }

type link[K comparable] struct{ prev, next *node[K] }

func (l *list[K]) pushBack(n *node[K]) {
	n.link = link[K]{prev: l.tail}
	if l.tail != nil {
		l.tail.link.next = n
	} else {
		l.head = n
	}
	l.tail = n
}

func (l *list[K]) remove(n *node[K]) {
	lk := &n.link
	if lk.prev != nil {
		lk.prev.link.next = lk.next
	} else {
		l.head = lk.next
	}
	if lk.next != nil {
		lk.next.link.prev = lk.prev
	} else {
		l.tail = lk.prev
	}
	*lk = link[K]{}
}
