package queue

import "k8s.io/client-go/util/workqueue"

// node is the queue's record of one key. A node is in exactly one of three
// places, given by state: the ready set, the waiting heap, or the processing
// slice. Nodes are recycled (Queue.free), so steady-state traffic allocates
// nothing.
//
// Its fields fit in 64 bytes, one cache line, for 32-byte keys (two strings,
// as in reconcile.Request), and nodes come in chunks whose size makes them
// aligned: big backlogs are bound by cache misses, so every byte counts.
// Fields that only some states use share space where they can.
type node[K comparable] struct {
	key K

	// at is when the node became ready (stateReady), becomes ready
	// (stateWaiting), or was handed out (stateProcessing, with metrics on).
	// Times are Queue.now readings: monotonic nanoseconds.
	at int64

	// pos is the node's position in its tenant's line and in the age ring
	// (stateReady). While the key is processed and dirty, it holds instead
	// the earliest time the key was added with since it was handed out (see
	// dirtyAt); while it waits, its place in the order of adding (see
	// waitSeq).
	pos [2]uint32

	// tenantQueue is the node's line: the one it is in (stateReady) or will
	// join when it is ready, which may be idle till then. It names the
	// node's tenant and, through its bucket, the key's priority: while the
	// key is processed and dirty, the highest priority it was added with
	// since it was handed out.
	tenantQueue *tenantQueue[K]

	// index is the node's place in Queue.waiting (stateWaiting) or in
	// Queue.processing (stateProcessing).
	index int32
	state state
	// dirty is set when the key is added while it is being processed: Done
	// queues it again, at priority and dirtyAt.
	dirty dirtiness
	// spare is set while GetSpare's key is being processed, so that the
	// keys Get handed out are counted apart (see spareGets.regular).
	spare bool
	// timed is set while Queue.changed holds the node's change time.
	timed bool
}

// dirtiness tells whether a key being processed was added again, and if so
// whether without a delay, so that workqueue_depth counts it already.
type dirtiness uint8

const (
	clean      dirtiness = iota
	dirtyLater           // added again, each time with a delay
	dirtyNow             // added again without a delay: counted in depth
)

// countDepth adds d to the depth gauge of the node's priority, if metrics
// are on.
func (n *node[K]) countDepth(d int) {
	g := n.tenantQueue.bucket.depth
	switch {
	case g == nil:
	case d > 0:
		g.Inc()
	default:
		g.Dec()
	}
}

// priority returns the key's priority: its line's.
func (n *node[K]) priority() int { return n.tenantQueue.bucket.priority }

// dirtyAt and setDirtyAt read and write the time a dirty key is to be ready,
// kept in pos, which a node being processed does not use.
func (n *node[K]) dirtyAt() int64 { return int64(n.word()) }

func (n *node[K]) setDirtyAt(at int64) { n.setWord(uint64(at)) }

// waitSeq and setWaitSeq read and write a waiting node's place in the order
// in which keys entered the waiting heap, kept in pos, which a waiting node
// does not use: it breaks ties between equal times first in, first out.
func (n *node[K]) waitSeq() uint64 { return n.word() }

func (n *node[K]) setWaitSeq(seq uint64) { n.setWord(seq) }

func (n *node[K]) word() uint64 { return uint64(n.pos[0]) | uint64(n.pos[1])<<32 }

func (n *node[K]) setWord(w uint64) { n.pos = [2]uint32{uint32(w), uint32(w >> 32)} }

type state uint8

const (
	stateReady state = iota + 1
	stateWaiting
	stateProcessing
)

// tenantQueue is one tenant's FIFO of ready nodes at one priority. A non-empty
// tenantQueue is in its bucket's ring; an empty (idle) one is in no ring, and
// stays in the bucket's map until a sweep, so a tenant whose line keeps
// emptying and filling costs no map writes.
type tenantQueue[K comparable] struct {
	name       string
	line       ring[K]         // first in, first out
	prev, next *tenantQueue[K] // ring of the bucket's (or group's) non-empty tenants
	bucket     *bucket[K]
	group      *tenantGroup[K] // nil unless Options.TenantGroup is set
	swept      bool            // idle, and taken out of its bucket's map
}

// tenantGroup is a group of tenants at one priority (Options.TenantGroup):
// a ring of its non-empty tenants, itself in its bucket's ring of groups
// while it has one. Groups are served round-robin, and within a group its
// tenants.
type tenantGroup[K comparable] struct {
	name       string
	ring       *tenantQueue[K] // the group's tenant served next; nil when it has none ready
	prev, next *tenantGroup[K] // ring of the bucket's groups with ready tenants
	tenants    int             // tenants in the bucket's map that belong to it
}

// bucket holds the ready nodes of one priority. ring is the tenant served
// next; tenants are served round-robin, one node each.
//
// With groups (Options.TenantGroup), ring is always the tenant served next
// of the group served next, groupRing.
type bucket[K comparable] struct {
	priority  int
	n         int
	ring      *tenantQueue[K]
	groupRing *tenantGroup[K]
	groups    map[string]*tenantGroup[K] // nil without groups
	tenants   map[string]*tenantQueue[K] // nil when fairness is off
	recent    [recentTenants]*tenantQueue[K]
	idle      int            // empty tenants in tenants
	single    tenantQueue[K] // the only tenant when fairness is off
	depth     workqueue.GaugeMetric
	pruned    bool // empty, and taken out of the ready set
}

// readySet holds ready nodes by priority, then tenant, then age, and also,
// with aging on, in one ring ordered by the time they became ready, so the
// oldest is found in O(1) for aging.
//
// Invariant: a node is in a tenant FIFO if and only if it is in the age ring
// (with aging on), and n counts them. Nodes enter the age ring in the order
// they become ready, which is the order of their at: the times come from a
// clock read under the queue's lock, or from the stamp, the latest such
// reading.
type readySet[K comparable] struct {
	buckets  []*bucket[K] // sorted by priority, highest first
	age      ring[K]      // ready nodes, oldest first, with aging on
	aging    bool
	n        int
	fair     bool
	groupOf  func(tenant string) string // Options.TenantGroup
	newDepth func(priority int) workqueue.GaugeMetric
}

// push appends n, which has priority and tenant set, to the back of its
// tenant's FIFO and of the age ring.
func (r *readySet[K]) push(n *node[K]) {
	r.link(n)
	if r.aging {
		r.age.pushBack(n)
	}
	r.n++
}

// remove takes n out of the ready set.
func (r *readySet[K]) remove(n *node[K]) {
	r.unlink(n)
	if r.aging {
		r.age.remove(n)
	}
	r.n--
}

// removeOutOfTurn takes n out of the ready set, as remove does, for a Get
// that may skip tenants (GetSpare). If n's tenant was not the one served
// next and keeps ready nodes, it goes to the back of its bucket's round: it
// has had its turn, and the tenants it overtook keep theirs.
func (r *readySet[K]) removeOutOfTurn(n *node[K]) {
	t := n.tenantQueue
	b := t.bucket
	r.remove(n)
	if t.group != nil {
		r.groupedOutOfTurn(b, t)
		return
	}
	if b.ring == nil || b.ring == t || b.ring.prev == t || t.line.len() == 0 {
		return
	}
	t.prev.next, t.next.prev = t.next, t.prev
	t.prev, t.next = b.ring.prev, b.ring
	b.ring.prev.next = t
	b.ring.prev = t
}

// oldest returns the node that has been ready longest, with aging on.
func (r *readySet[K]) oldest() *node[K] { return r.age.front() }

// raise moves n to a higher priority, keeping its place in the age ring.
func (r *readySet[K]) raise(n *node[K], priority int) {
	r.unlink(n)
	r.setPriority(n, priority)
	r.link(n)
}

// setPriority gives n, which is not in the ready set, the given priority:
// the line of its tenant at that priority.
func (r *readySet[K]) setPriority(n *node[K], priority int) {
	n.tenantQueue = r.line(priority, n.tenantQueue.name)
}

// next returns the node that priority and fairness choose: the head of the
// next tenant in the highest non-empty bucket. The set must not be empty.
func (r *readySet[K]) next() *node[K] {
	for _, b := range r.buckets {
		if b.n > 0 {
			return b.ring.line.front()
		}
	}
	panic("queue: next on an empty ready set")
}

// line returns the line of the given priority and tenant, creating it (idle)
// if needed.
func (r *readySet[K]) line(priority int, tenant string) *tenantQueue[K] {
	b := r.bucket(priority)
	if !r.fair {
		return &b.single
	}
	if t := b.tenant(tenant); t != nil {
		return t
	}
	return newTenant(b, tenant, r.groupOf)
}

// link appends n to its line. If that line, or its bucket, was dropped while
// n was away from the ready set, n joins the one that replaces it.
func (r *readySet[K]) link(n *node[K]) {
	t := n.tenantQueue
	if t.swept || t.bucket.pruned {
		t = r.line(t.bucket.priority, t.name)
	}
	b := t.bucket
	if r.fair && t.line.len() == 0 {
		b.idle--
	}
	n.tenantQueue = t
	if t.group != nil {
		if t.line.len() == 0 {
			joinGroup(b, t)
		}
	} else if t.line.len() == 0 {
		// A tenant that was empty joins the ring just behind the tenant
		// served next: it waits at most one turn of every other tenant.
		if b.ring == nil {
			t.prev, t.next = t, t
			b.ring = t
		} else {
			t.prev, t.next = b.ring.prev, b.ring
			b.ring.prev.next = t
			b.ring.prev = t
		}
	}
	t.line.pushBack(n)
	b.n++
	if b.depth != nil {
		b.depth.Inc()
	}
}

// unlink takes n out of its tenant's FIFO. When n was the head of the tenant
// served next, the ring moves on: that tenant has had its turn.
func (r *readySet[K]) unlink(n *node[K]) {
	t := n.tenantQueue
	b := t.bucket
	wasTurn := b.ring == t && t.line.front() == n
	t.line.remove(n)
	b.n--
	if b.depth != nil {
		b.depth.Dec()
	}
	if t.group != nil {
		r.groupedUnlink(b, t, wasTurn)
		return
	}
	switch {
	case t.line.len() == 0:
		r.dropTenant(b, t)
	case wasTurn:
		b.ring = t.next
	}
}

// dropTenant takes an emptied tenant out of its bucket's ring; it stays in
// the map, idle.
func (r *readySet[K]) dropTenant(b *bucket[K], t *tenantQueue[K]) {
	if t.group != nil {
		leaveGroup(b, t)
		b.idle++
		return
	}
	if t.next == t {
		b.ring = nil
	} else {
		t.prev.next = t.next
		t.next.prev = t.prev
		if b.ring == t {
			b.ring = t.next
		}
	}
	t.prev, t.next = nil, nil
	if r.fair {
		b.idle++
	}
}

// maxIdleTenants is how many idle tenants a bucket keeps before a new tenant
// sweeps them out: enough for the namespaces of most clusters, few enough
// that tenants which come and go do not pile up.
const maxIdleTenants = 1024

func newTenant[K comparable](b *bucket[K], name string, groupOf func(string) string) *tenantQueue[K] {
	if b.idle > maxIdleTenants {
		for name, t := range b.tenants {
			if t.line.len() == 0 {
				delete(b.tenants, name)
				t.swept = true
				if g := t.group; g != nil {
					if g.tenants--; g.tenants == 0 {
						delete(b.groups, g.name)
					}
				}
			}
		}
		b.idle = 0
		clear(b.recent[:])
	}
	t := &tenantQueue[K]{name: name, bucket: b, line: ring[K]{slot: lineSlot}}
	if groupOf != nil {
		t.group = b.group(groupOf(name))
		t.group.tenants++
	}
	b.tenants[name] = t
	b.recent[recentSlot(name)] = t
	b.idle++ // until a node joins it
	return t
}

// recentTenants is the size of a bucket's cache of tenants looked up, which
// spares most adds a map lookup: under a big backlog that lookup costs
// several cache misses, for the map competes for the cache with the keys.
const recentTenants = 16

// tenant returns the bucket's queue for the named tenant, or nil. It looks in
// the cache of recent tenants, then in the map.
func (b *bucket[K]) tenant(name string) *tenantQueue[K] {
	i := recentSlot(name)
	if t := b.recent[i]; t != nil && t.name == name {
		return t
	}
	t := b.tenants[name]
	if t != nil {
		b.recent[i] = t
	}
	return t
}

// recentSlot picks a tenant's place in the cache from its length and its
// first and last two bytes: cheap, and enough to tell apart the namespaces
// of most clusters.
func recentSlot(name string) int {
	h := uint(len(name))
	if len(name) > 0 {
		h = h*31 + uint(name[0])
		h = h*31 + uint(name[len(name)-1])
	}
	if len(name) > 1 {
		h = h*31 + uint(name[len(name)-2])
	}
	return int(h % recentTenants)
}

// maxEmptyBuckets is how many buckets the ready set keeps in all before it
// drops empty ones: most queues see a few distinct priorities, and keeping
// their buckets saves an allocation each time one empties and fills again.
const maxEmptyBuckets = 16

// bucket returns the bucket of priority p, creating it if needed.
func (r *readySet[K]) bucket(p int) *bucket[K] {
	i := 0
	for ; i < len(r.buckets); i++ {
		if b := r.buckets[i]; b.priority == p {
			return b
		} else if b.priority < p {
			break
		}
	}
	if len(r.buckets) >= maxEmptyBuckets && r.pruneEmptyBuckets() {
		return r.bucket(p) // the insertion index has changed
	}
	b := &bucket[K]{priority: p}
	b.single.bucket = b
	if r.fair {
		b.tenants = map[string]*tenantQueue[K]{}
	}
	if r.groupOf != nil {
		b.groups = map[string]*tenantGroup[K]{}
	}
	if r.newDepth != nil {
		b.depth = r.newDepth(p)
	}
	r.buckets = append(r.buckets, nil)
	copy(r.buckets[i+1:], r.buckets[i:])
	r.buckets[i] = b
	return b
}

// pruneEmptyBuckets drops empty buckets and reports whether it dropped any.
func (r *readySet[K]) pruneEmptyBuckets() bool {
	n := len(r.buckets)
	kept := r.buckets[:0]
	for _, b := range r.buckets {
		if b.n > 0 {
			kept = append(kept, b)
		} else {
			b.pruned = true
		}
	}
	clear(r.buckets[len(kept):])
	r.buckets = kept
	return len(kept) < n
}
