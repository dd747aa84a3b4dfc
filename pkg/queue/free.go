package queue

import "sync"

// freeNodes recycles nodes first in, first out, so that steady traffic
// allocates none and, as important, so that nodes are reused in the order
// they were freed. Get frees nodes in about the order Add took them, so a
// backlog's nodes lie in memory in the order Get will visit them, and the
// processor's prefetcher has them in cache before Get reads them: a big
// backlog costs one cache miss per key less than with nodes reused last in,
// first out, which scatters them.
//
// Fresh nodes come in chunks of freeChunk, contiguous in memory. Free nodes
// beyond maxFree go, a chunk's worth at a time and in order, to a sync.Pool,
// so that the garbage collector can take back the room of a burst that is
// not repeated.
type freeNodes[K comparable] struct {
	buf      []*node[K] // a ring; len(buf) is zero or a power of two
	head, n  int
	overflow sync.Pool   // of *[]*node[K], freeChunk nodes each in order
	spare    *[]*node[K] // an emptied chunk from overflow, for the next spill
}

const (
	freeChunk = 256
	maxFree   = 16 * freeChunk
)

func (f *freeNodes[K]) pop() *node[K] {
	if f.n == 0 {
		f.refill()
	}
	n := f.buf[f.head]
	f.buf[f.head] = nil
	f.head = (f.head + 1) & (len(f.buf) - 1)
	f.n--
	return n
}

func (f *freeNodes[K]) push(n *node[K]) {
	if f.n == maxFree {
		f.spill()
	}
	if f.n == len(f.buf) {
		f.grow()
	}
	f.buf[(f.head+f.n)&(len(f.buf)-1)] = n
	f.n++
}

// refill takes a chunk of nodes from the overflow, or allocates one.
func (f *freeNodes[K]) refill() {
	if chunk, _ := f.overflow.Get().(*[]*node[K]); chunk != nil {
		for _, n := range *chunk {
			f.push(n)
		}
		clear(*chunk)
		f.spare = chunk
		return
	}
	chunk := make([]node[K], freeChunk)
	for i := range chunk {
		f.push(&chunk[i])
	}
}

// spill moves the freeChunk nodes that would be reused first to the overflow.
func (f *freeNodes[K]) spill() {
	chunk := f.spare
	if chunk == nil {
		chunk = new([]*node[K])
		*chunk = make([]*node[K], freeChunk)
	}
	f.spare = nil
	for i := range *chunk {
		(*chunk)[i] = f.pop()
	}
	f.overflow.Put(chunk)
}

func (f *freeNodes[K]) grow() {
	buf := make([]*node[K], max(freeChunk, 2*len(f.buf)))
	for i := range f.n {
		buf[i] = f.buf[(f.head+i)&(len(f.buf)-1)]
	}
	f.buf, f.head = buf, 0
}

// newNode returns a node for key, recycled if one is free.
func (q *Queue[K]) newNode(key K) *node[K] {
	n := q.free.pop()
	n.key = key
	return n
}

// freeNode clears n, whose key the queue no longer holds, for reuse.
func (q *Queue[K]) freeNode(n *node[K]) {
	q.takeChanged(n)
	*n = node[K]{}
	q.free.push(n)
}
