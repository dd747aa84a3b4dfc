package queue

// Two-level fairness (Options.TenantGroup): a bucket serves its groups
// round-robin, one key per group per turn, and each group serves its
// tenants round-robin. bucket.ring stays the tenant served next, the
// group served next's own, so that next and Get need not know of groups.

// group returns the bucket's group of the given name, making it if needed.
func (b *bucket[K]) group(name string) *tenantGroup[K] {
	if g := b.groups[name]; g != nil {
		return g
	}
	g := &tenantGroup[K]{name: name}
	b.groups[name] = g
	return g
}

// joinGroup puts t, which is about to receive its first ready node, into
// its group's ring just behind the tenant the group serves next, and the
// group, if it had no ready tenant, into the bucket's ring just behind the
// group served next: each waits at most one turn of the others.
func joinGroup[K comparable](b *bucket[K], t *tenantQueue[K]) {
	g := t.group
	if g.ring == nil {
		t.prev, t.next = t, t
		g.ring = t
		if b.groupRing == nil {
			g.prev, g.next = g, g
			b.groupRing = g
		} else {
			g.prev, g.next = b.groupRing.prev, b.groupRing
			b.groupRing.prev.next = g
			b.groupRing.prev = g
		}
	} else {
		t.prev, t.next = g.ring.prev, g.ring
		g.ring.prev.next = t
		g.ring.prev = t
	}
	b.ring = b.groupRing.ring
}

// leaveGroup takes the emptied tenant t out of its group's ring, and its
// group out of the bucket's ring if no tenant of it is left ready.
func leaveGroup[K comparable](b *bucket[K], t *tenantQueue[K]) {
	g := t.group
	if t.next == t {
		g.ring = nil
	} else {
		t.prev.next = t.next
		t.next.prev = t.prev
		if g.ring == t {
			g.ring = t.next
		}
	}
	t.prev, t.next = nil, nil
	if g.ring == nil {
		if g.next == g {
			b.groupRing = nil
		} else {
			g.prev.next = g.next
			g.next.prev = g.prev
			if b.groupRing == g {
				b.groupRing = g.next
			}
		}
		g.prev, g.next = nil, nil
	}
	b.setRing()
}

// groupedUnlink ends unlink for a grouped tenant t that has just lost a
// node: when that node was the one served next, both t's group and the
// bucket move on, for t and its group have had their turns.
func (r *readySet[K]) groupedUnlink(b *bucket[K], t *tenantQueue[K], wasTurn bool) {
	g := t.group
	if t.line.len() == 0 {
		r.dropTenant(b, t) // moves g.ring on from t, and b.groupRing from g if g emptied
		if wasTurn && g.ring != nil {
			b.groupRing = g.next
		}
	} else if wasTurn {
		g.ring = t.next
		b.groupRing = g.next
	}
	b.setRing()
}

// groupedOutOfTurn ends removeOutOfTurn for a grouped tenant t: a tenant
// served before its turn goes to the back of its group's round, and its
// group to the back of the bucket's, if they keep ready nodes.
func (r *readySet[K]) groupedOutOfTurn(b *bucket[K], t *tenantQueue[K]) {
	g := t.group
	if t.line.len() > 0 && g.ring != t && g.ring.prev != t {
		t.prev.next, t.next.prev = t.next, t.prev
		t.prev, t.next = g.ring.prev, g.ring
		g.ring.prev.next = t
		g.ring.prev = t
	}
	if g.ring != nil && b.groupRing != g && b.groupRing.prev != g {
		g.prev.next, g.next.prev = g.next, g.prev
		g.prev, g.next = b.groupRing.prev, b.groupRing
		b.groupRing.prev.next = g
		b.groupRing.prev = g
	}
	b.setRing()
}

// setRing makes the bucket's tenant served next its group served next's.
func (b *bucket[K]) setRing() {
	if b.groupRing == nil {
		b.ring = nil
	} else {
		b.ring = b.groupRing.ring
	}
}

// tenantsInTurn calls yield with the bucket's ready tenants in the order they
// are to be served, each group's in its turn, until yield returns false.
func (b *bucket[K]) tenantsInTurn(yield func(*tenantQueue[K]) bool) {
	if b.groups == nil {
		for t := b.ring; t != nil; {
			if !yield(t) {
				return
			}
			if t = t.next; t == b.ring {
				return
			}
		}
		return
	}
	for g := b.groupRing; g != nil; {
		for t := g.ring; t != nil; {
			if !yield(t) {
				return
			}
			if t = t.next; t == g.ring {
				break
			}
		}
		if g = g.next; g == b.groupRing {
			return
		}
	}
}
