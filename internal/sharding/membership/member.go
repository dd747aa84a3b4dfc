package membership

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// ErrRunning is returned by Run when the Member already ran: a Member
// joins its group once; make a new one to join again.
var ErrRunning = errors.New("member already ran")

// Member is one process's membership of a group sharing slots: it keeps a
// Lease of its own renewed, claims the slots rendezvous hashing assigns it
// over the live members, holds a claimed slot once no other live member
// claims it, and hands slots over when membership changes. See the package
// doc for the protocol and its guarantee.
//
// MayDispatch, Holds, Held, Stats, View and Identity are safe for
// concurrent use.
type Member struct {
	opts   Options
	leases coordinationclient.LeaseInterface

	// held[s] is true while slot s is held: claimed in the Lease at the
	// last successful renewal, and no live member claimed it in the list
	// that followed. Only the loop sets it; MayDispatch reads it.
	held []atomic.Bool
	// lastRenew is when the last successful renewal was sent, on
	// Options.Clock; nil before the first.
	lastRenew atomic.Pointer[time.Time]
	running   atomic.Bool

	// released receives the slots whose Handler.Release returned.
	released chan []int

	// Fields below are the loop's own.
	lease     *coordinationv1.Lease // as last written or read; nil to create
	written   map[int]bool          // claims in the Lease as last written
	claims    map[int]bool          // claims to write next
	releasing map[int]bool          // claimed, not held, in Release
	seen      map[string]sighting   // other members' Leases by identity
	wanted    map[int]wanting       // slots assigned here, not yet held

	// With Options.LoadHalfLife: meter measures the held slots' loads,
	// writtenLoad is this member's AnnotationLoad as last written, and
	// remembered each slot's load as last reported by any member. While
	// this member is the planner, plan is the AnnotationPlan to write and
	// writtenPlan the one last written; both nil otherwise. busySince is
	// when the loads in view last became busy enough to balance on, and
	// uneven how long they have left the plan's assignment uneven;
	// anchor what a change of members is balanced from.
	meter       *meter
	writtenLoad map[int]float64
	remembered  map[int]float64
	plan        []float64
	writtenPlan []float64
	heardPlan   []float64 // the plan last read from a peer's Lease
	busySince   time.Time
	uneven      sustained
	anchor      anchor

	mu    sync.Mutex
	stats Stats
	view  View // the last successful round's
}

// sighting is when this member first saw a Lease at resourceVersion rv.
type sighting struct {
	rv    string
	since time.Time
}

// wanting is when this member first wanted a slot it does not hold, and
// whether another member claimed it then.
type wanting struct {
	since     time.Time
	contested bool
}

// Stats is a snapshot of a Member for metrics.
type Stats struct {
	// Held is the number of slots held now.
	Held int
	// Members is the number of live members, this one included, in the
	// last successful round; 0 before the first.
	Members int
	// Handovers counts the slots this member came to hold while another
	// member claimed them when it first wanted them.
	Handovers int64
	// LastTakeover is, for the last of those, how long it took from first
	// wanting the slot to holding it.
	LastTakeover time.Duration
	// LastRenewal is when the last successful renewal was sent, on
	// Options.Clock; zero before the first.
	LastRenewal time.Time
}

// New returns a Member of opts.Group that renews its Lease through cs.
// It errors, wrapping ErrInvalidOptions, on options it refuses; Run starts
// it. cs should be a clientset of its own, so that a busy controller's
// client-side rate limiting cannot delay a renewal.
func New(cs kubernetes.Interface, opts Options) (*Member, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	var mt *meter
	if o.LoadHalfLife > 0 {
		mt = newMeter(o.LoadHalfLife)
	}
	return &Member{
		meter:      mt,
		remembered: map[int]float64{},
		opts:       o,
		leases:     cs.CoordinationV1().Leases(o.Namespace),
		held:       make([]atomic.Bool, o.Slots),
		released:   make(chan []int, 1),
		written:    map[int]bool{},
		claims:     map[int]bool{},
		releasing:  map[int]bool{},
		seen:       map[string]sighting{},
		wanted:     map[int]wanting{},
	}, nil
}

// Identity is this member's identity in its group.
func (m *Member) Identity() string { return m.opts.Identity }

// MayDispatch reports whether a reconcile of a key of slot may start now:
// the slot is held and the last successful renewal is younger than
// RenewDeadline. It turns false by itself when renewals stop succeeding,
// before any other member may take the slot. A slot outside 0..Slots-1 is
// never dispatchable.
func (m *Member) MayDispatch(slot int) bool {
	return m.Holds(slot) && m.fresh()
}

// Holds reports whether slot is held, whether or not the renew deadline
// has passed: from the round that gained it (before Handler.Held) until
// its release begins (before Handler.Release). While renewals are late
// MayDispatch is false for a held slot; the next successful renewal makes
// it true again, with no Handler.Held, unless the gap went beyond
// RenewDeadline when the next round began, which releases every slot.
func (m *Member) Holds(slot int) bool {
	return slot >= 0 && slot < len(m.held) && m.held[slot].Load()
}

// fresh reports whether the last successful renewal is within the
// deadline.
func (m *Member) fresh() bool {
	last := m.lastRenew.Load()
	return last != nil && m.opts.Clock.Since(*last) < m.opts.RenewDeadline
}

// ObserveLoad adds took, the work of one reconcile of a key of slot that
// has just ended, to the slot's load, when Options.LoadHalfLife is set and
// the slot is held; otherwise it does nothing. It is safe for concurrent
// use.
func (m *Member) ObserveLoad(slot int, took time.Duration) {
	if m.meter != nil && m.Holds(slot) {
		m.meter.observe(slot, took, m.opts.Clock.Now())
	}
}

// Held returns the slots MayDispatch allows now, ascending.
func (m *Member) Held() []int {
	if !m.fresh() {
		return nil
	}
	var out []int
	for s := range m.held {
		if m.held[s].Load() {
			out = append(out, s)
		}
	}
	return out
}

// Stats returns a snapshot for metrics.
func (m *Member) Stats() Stats {
	m.mu.Lock()
	s := m.stats
	m.mu.Unlock()
	s.Held = len(m.Held())
	if last := m.lastRenew.Load(); last != nil {
		s.LastRenewal = *last
	}
	return s
}

// Run joins the group and takes part until ctx ends, then leaves
// gracefully: it stops dispatching every slot, waits for Handler.Release,
// and deletes its Lease so that others take its slots at once. It returns
// nil after a graceful leave, an error if the Lease could not be deleted
// (others then take the slots after LeaseDuration), and ErrRunning if
// called twice.
func (m *Member) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return fmt.Errorf("membership: run %s: %w", m.opts.Identity, ErrRunning)
	}
	log := m.opts.Logger.WithValues("group", m.opts.Group, "identity", m.opts.Identity)
	log.Info("Joining shard group", "slots", m.opts.Slots)
	for {
		m.round(ctx, false)
		select {
		case <-ctx.Done():
			return m.leave(context.WithoutCancel(ctx))
		case slots := <-m.released:
			m.unclaim(slots)
		case <-m.opts.Clock.After(m.opts.RetryPeriod):
		}
	}
}

// leave releases every slot, renewing while Handler.Release runs, then
// deletes the Lease.
func (m *Member) leave(ctx context.Context) error {
	m.release(ctx, m.heldSlots(), "leaving")
	for len(m.releasing) > 0 {
		select {
		case slots := <-m.released:
			m.unclaim(slots)
		case <-m.opts.Clock.After(m.opts.RetryPeriod):
			m.round(ctx, true)
		}
	}
	if m.lease == nil || m.lease.ResourceVersion == "" {
		return nil
	}
	if err := m.leases.Delete(ctx, m.lease.Name, deleteExactly(m.lease)); err != nil && !isGone(err) {
		return fmt.Errorf("membership: delete Lease %s/%s on leave (others take its slots after LeaseDuration): %w", m.opts.Namespace, m.lease.Name, err)
	}
	m.opts.Logger.Info("Left shard group", "group", m.opts.Group, "identity", m.opts.Identity)
	return nil
}

// unclaim drops the claims of slots whose release finished.
func (m *Member) unclaim(slots []int) {
	for _, s := range slots {
		delete(m.releasing, s)
		delete(m.claims, s)
	}
}

// heldSlots returns the held slots, ignoring the renewal deadline.
func (m *Member) heldSlots() []int {
	var out []int
	for s := range m.held {
		if m.held[s].Load() {
			out = append(out, s)
		}
	}
	return out
}

// release stops dispatching slots and calls Handler.Release on a goroutine
// of its own; its claims stay until it returns.
func (m *Member) release(ctx context.Context, slots []int, why string) {
	if len(slots) == 0 {
		return
	}
	for _, s := range slots {
		m.held[s].Store(false)
		m.releasing[s] = true
	}
	m.opts.Logger.V(1).Info("Releasing slots", "identity", m.opts.Identity, "slots", slots, "reason", why)
	go func() {
		m.opts.Handler.Release(context.WithoutCancel(ctx), slots)
		m.released <- slots
	}()
}
