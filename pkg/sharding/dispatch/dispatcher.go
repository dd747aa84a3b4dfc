package dispatch

import (
	"context"
	"sync"
)

// Member is what a Dispatcher asks of membership: whether this replica may
// start a reconcile of a slot's key now. *membership.Member implements it.
type Member interface {
	MayDispatch(slot int) bool
}

// MemberFunc adapts a function to a Member.
type MemberFunc func(slot int) bool

var _ Member = MemberFunc(nil)

// MayDispatch calls f.
func (f MemberFunc) MayDispatch(slot int) bool { return f(slot) }

// owner is a controller's part of a handover: it queues its keys of slots
// this replica came to hold.
type owner interface {
	queueSlots(held map[int]bool)
}

// Dispatcher admits a reconcile only for a slot this replica may dispatch,
// and hands slots over: Held queues their keys, Release waits for their
// reconciles. It implements membership.Handler through Held and Release.
// Its methods are safe for concurrent use.
type Dispatcher struct {
	member Member

	mu sync.Mutex
	// idle is signalled whenever a slot's in-flight count drops to 0.
	idle *sync.Cond
	// inflight[s] is the number of admitted reconciles of slot s that
	// have not returned; a slot with none is absent.
	inflight map[int]int
	// releasing holds the slots in Release: refused whatever member says.
	releasing map[int]bool
	owners    []owner
}

// New returns a Dispatcher that asks member before each reconcile.
func New(member Member) *Dispatcher {
	d := &Dispatcher{member: member, inflight: map[int]int{}, releasing: map[int]bool{}}
	d.idle = sync.NewCond(&d.mu)
	return d
}

// admit reports whether a reconcile of slot may start now and, if so,
// counts it in flight until finish.
func (d *Dispatcher) admit(slot int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.releasing[slot] || !d.member.MayDispatch(slot) {
		return false
	}
	d.inflight[slot]++
	return true
}

// holds reports whether this replica may dispatch slot now.
func (d *Dispatcher) holds(slot int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.releasing[slot] && d.member.MayDispatch(slot)
}

// finish ends an admitted reconcile of slot.
func (d *Dispatcher) finish(slot int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inflight[slot]--
	if d.inflight[slot] <= 0 {
		delete(d.inflight, slot)
		d.idle.Broadcast()
	}
}

// Held queues every key of slots, which this replica now holds, on each
// controller's queue, from the primary type's cache. It does not block on
// reconciles: it runs on the member's loop.
func (d *Dispatcher) Held(slots []int) {
	set := make(map[int]bool, len(slots))
	d.mu.Lock()
	for _, s := range slots {
		set[s] = true
		delete(d.releasing, s)
	}
	owners := d.owners
	d.mu.Unlock()
	for _, o := range owners {
		o.queueSlots(set)
	}
}

// Release refuses the keys of slots from now on, then returns once every
// admitted reconcile of them has returned, so that the next holder never
// overlaps with this one. The member calls it after MayDispatch turned
// false for slots and never cancels ctx; a caller that does cancel it gets
// an early return, with reconciles possibly still in flight.
func (d *Dispatcher) Release(ctx context.Context, slots []int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range slots {
		d.releasing[s] = true
	}
	stop := context.AfterFunc(ctx, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.idle.Broadcast()
	})
	defer stop()
	for d.busy(slots) && ctx.Err() == nil {
		d.idle.Wait()
	}
}

// busy reports whether any of slots has a reconcile in flight; d.mu held.
func (d *Dispatcher) busy(slots []int) bool {
	for _, s := range slots {
		if d.inflight[s] > 0 {
			return true
		}
	}
	return false
}

// InFlight returns the number of admitted reconciles that have not
// returned, over all slots.
func (d *Dispatcher) InFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.inflight {
		n += c
	}
	return n
}

func (d *Dispatcher) addOwner(o owner) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.owners = append(d.owners, o)
}
