package dispatch

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// Member is what a Dispatcher asks of membership. *membership.Member
// implements it.
type Member interface {
	// Holds reports whether this replica holds slot, whether or not it
	// may dispatch it now: from when the slot is gained (before Held)
	// until its release begins (before Release).
	Holds(slot int) bool
	// MayDispatch reports whether a reconcile of a key of slot may start
	// now: the slot is held and this replica's fence is open. A held
	// slot's fence closes while renewals are late and opens again at the
	// next successful one, with no Held in between.
	MayDispatch(slot int) bool
}

// MemberFunc adapts a function that says which slots are held to a Member
// that is never fenced.
type MemberFunc func(slot int) bool

var _ Member = MemberFunc(nil)

// Holds calls f.
func (f MemberFunc) Holds(slot int) bool { return f(slot) }

// MayDispatch calls f.
func (f MemberFunc) MayDispatch(slot int) bool { return f(slot) }

// owner is a controller's part of a handover: it queues its keys of slots
// this replica came to hold.
type owner interface {
	queueSlots(held map[int]bool)
}

// Options configure New. The zero value is valid: no split cache.
type Options struct {
	// Cache, when set, is split by slots, and the Dispatcher keeps it
	// holding this replica's slots (Run): a slot's keys are admitted only
	// once the cache holds its objects, so that a reconciler never reads
	// NotFound for an object that exists. Defaults to none: the cache
	// holds every object.
	Cache SlotCache
	// MinBackoff and MaxBackoff bound the wait before a failed
	// Cache.SetSlots is tried again. Default to DefaultMinBackoff and
	// DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// Clock times that backoff, and a gained slot's sync. Defaults to the
	// real clock.
	Clock clock.Clock
	// Registerer receives imetrics.ShardingCacheSetSlotsErrors and
	// ShardingSlotSync. Defaults to none.
	Registerer prometheus.Registerer
	// Logger logs failed SetSlots. Defaults to logr.Discard().
	Logger logr.Logger
	// Observe, when set, hears of each admitted reconcile once it has
	// returned: its slot, and how long it took on Clock (the member's
	// ObserveLoad, which balances the slots by load). It must not block.
	// Defaults to nil.
	Observe func(slot int, took time.Duration)
}

// Dispatcher admits a reconcile only for a slot this replica may dispatch,
// and hands slots over: Held queues their keys, Release waits for their
// reconciles. It implements membership.Handler through Held and Release.
// Its methods are safe for concurrent use.
type Dispatcher struct {
	member         Member
	opts           Options
	kick           chan struct{} // a change of want for Run; buffered
	setSlotsErrors prometheus.Counter
	slotSync       prometheus.Histogram

	mu sync.Mutex
	// idle is signalled whenever a slot's in-flight count drops to 0.
	idle *sync.Cond
	// inflight[s] is the number of admitted reconciles of slot s that
	// have not returned; a slot with none is absent.
	inflight map[int]int
	// releasing holds the slots in Release: refused whatever member says.
	releasing map[int]bool
	owners    []owner

	// With Options.Cache: want holds the slots the cache must hold (held
	// or being released); cached those it holds for sure; set the slots
	// of the last successful SetSlots, and syncErr the error of the last
	// one if it failed; toQueue the slots gained whose keys are queued
	// once cached, and gained when each of those was. A held slot's key
	// is admitted only if the slot is in cached.
	want, cached, toQueue map[int]bool
	gained                map[int]time.Time
	set                   []int
	syncErr               error
}

// New returns a Dispatcher that asks member before each reconcile. With
// opts.Cache, run Run too.
func New(member Member, opts Options) (*Dispatcher, error) {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.MinBackoff)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	errs, err := newSetSlotsErrors(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	slotSync, err := newSlotSync(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	d := &Dispatcher{
		member: member, opts: opts, kick: make(chan struct{}, 1), setSlotsErrors: errs, slotSync: slotSync,
		inflight: map[int]int{}, releasing: map[int]bool{},
		want: map[int]bool{}, cached: map[int]bool{}, toQueue: map[int]bool{}, gained: map[int]time.Time{},
	}
	d.idle = sync.NewCond(&d.mu)
	return d, nil
}

// admission is the Dispatcher's answer for a slot's key.
type admission int

const (
	// admitted: reconcile now; counted in flight until finish.
	admitted admission = iota
	// notHeld: another replica's, or soon: skip. Whoever comes to hold
	// the slot queues its keys (Held).
	notHeld
	// fenced: held, but the fence is closed (renewals are late): retry.
	// The slot stays this replica's until a release, and no Held comes
	// when the fence opens again, so a key skipped now would be lost.
	fenced
	// notCached: held, but the cache may not hold the slot's objects
	// yet: retry.
	notCached
)

// admit says whether a reconcile of slot may start now. With admitted it
// counts the reconcile in flight until finish.
func (d *Dispatcher) admit(slot int) admission {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.releasing[slot] || !d.member.Holds(slot):
		return notHeld
	case !d.member.MayDispatch(slot):
		return fenced
	case !d.cachedLocked(slot):
		return notCached
	}
	d.inflight[slot]++
	return admitted
}

// holds reports whether this replica holds slot, its fence open or not.
func (d *Dispatcher) holds(slot int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.releasing[slot] && d.member.Holds(slot)
}

// start returns what finish needs to time a reconcile admitted now: the
// zero time without Options.Observe, which then costs no clock read.
func (d *Dispatcher) start() time.Time {
	if d.opts.Observe == nil {
		return time.Time{}
	}
	return d.opts.Clock.Now()
}

// finish ends an admitted reconcile of slot, begun at began (start).
func (d *Dispatcher) finish(slot int, began time.Time) {
	if d.opts.Observe != nil {
		d.opts.Observe(slot, d.opts.Clock.Since(began))
	}
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
// reconciles: it runs on the member's loop. With Options.Cache it only
// asks Run to make the cache hold slots; Run queues their keys once it
// does, and until then the gates answer Retry for them.
func (d *Dispatcher) Held(slots []int) {
	set := make(map[int]bool, len(slots))
	d.mu.Lock()
	for _, s := range slots {
		set[s] = true
		delete(d.releasing, s)
	}
	owners := d.owners
	if d.opts.Cache != nil {
		d.wantLocked(slots)
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	for _, o := range owners {
		o.queueSlots(set)
	}
}

// Release refuses the keys of slots from now on, then returns once every
// admitted reconcile of them has returned, so that the next holder never
// overlaps with this one. The member calls it after MayDispatch turned
// false for slots and never cancels ctx; a caller that does cancel it gets
// an early return, with reconciles possibly still in flight. With
// Options.Cache, Run then drops the slots from the cache; the deletes the
// cache hands on for their objects queue keys the gates refuse.
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
	if d.opts.Cache != nil && !d.busy(slots) {
		d.unwantLocked(slots)
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

func (d *Dispatcher) removeOwner(o owner) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.owners = slices.DeleteFunc(d.owners, func(x owner) bool { return x == o })
}
