package manager

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// DefaultBalanceHalfLife is the default of BalanceOptions.HalfLife.
const DefaultBalanceHalfLife = time.Minute

// BalanceOptions balance the slots by the work their keys take, not by
// their count alone. Slots hash unevenly: with objects spread by a
// uniform hash the busiest of five replicas holding equal counts of
// slots carries about 6% more than its share, and with a few hot
// namespaces under sharding.ByNamespace several times more; balancing
// by load brings it within 1–2% of its share for loads that hold still
// (in simulation: internal/sharding/membership's Balance tests).
//
// Each move costs the replica that gains a slot a list of that slot's
// objects where the API server filters by shard selector, and of every
// object of the sharded types where it does not (see cache.Cache.SetSlots), so
// balancing pays where the load holds still for longer than it takes to
// move the slots (docs/performance.md has the scale-out benchmark's
// figures); without server filtering, leave it off. It is off by
// default.
//
// Each replica times its reconciles of each slot it holds (wall time,
// from admission until the reconcile returns, so a reconcile waiting on a
// slow dependency counts in full), turns the times into a rate (the share
// of a worker the slot keeps busy, averaged with weights that halve every
// HalfLife), and writes the rates to its Lease at each renewal, in the
// sharding.opkit.dev/load annotation: no write of its own. The planner,
// the live replica of lowest identity, copies them into a plan in its
// Lease (sharding.opkit.dev/plan) once they have been busy for a
// HalfLife, and every replica balances on that one plan: it swaps slots
// between the busiest replica and lighter ones while a swap lowers the
// busiest one's load by more than 1% of the mean load.
// The planner renews the plan only while no slot moves and the busiest
// replica has been more than 3% over the mean for a whole HalfLife, so
// a burst that keeps every replica busy alike moves nothing, and one
// shorter than HalfLife moves nothing while it lasts. Swaps keep each replica's count of
// slots, and hand over as any move does: the old holder's reconciles of
// the slot return before the new holder's start. When a replica joins or
// leaves, the swaps prefer the slots that move anyway (a dead replica's,
// a newcomer's share), so that a death moves few of the survivors' own
// slots. A slot that moves keeps
// the rate its old holder measured until its new holder's measure takes
// over.
//
// Balancing needs the API server to filter the sharded types by shard
// selector (cache.Cache.ServerFiltered). Without that filter each move
// lists every object of the type, and the time that takes reads as load
// on the slots, so balancing would chase its own moves; a replica then
// says so in its log, measures no load, and balances by count.
//
// Every replica of the group must set the same options. Until the
// replicas keep a tenth of a worker busy each, on average (a new group,
// an idle one, or one that only resyncs), slots are balanced by count
// alone: loads that small are noise.
type BalanceOptions struct {
	// Enabled turns balancing by load on. Defaults to false: slots are
	// balanced by count.
	Enabled bool
	// HalfLife is how long before the work of a reconcile counts half in
	// its slot's rate: longer reads a load that varies as its average,
	// shorter follows a load that moves. Defaults to
	// DefaultBalanceHalfLife.
	HalfLife time.Duration
}

// halfLife returns the half-life the member measures loads with; 0 when
// balancing is off.
func (bo BalanceOptions) halfLife() time.Duration {
	switch {
	case !bo.Enabled:
		return 0
	case bo.HalfLife == 0:
		return DefaultBalanceHalfLife
	}
	return bo.HalfLife
}

func (bo BalanceOptions) validate() []error {
	if bo.HalfLife < 0 {
		return []error{fmt.Errorf("Options.Sharding.Balance.HalfLife is %v: it must be 0 (the default, %v) or positive", bo.HalfLife, DefaultBalanceHalfLife)}
	}
	return nil
}

// balanceObserver returns what the dispatcher hands each reconcile's time
// to with Balance on: observe, once the first reconcile finds the cache's
// sharded types filtered by the API server; nothing otherwise, for the
// replica's life, which leaves the slots balanced by count (see
// BalanceOptions). The first reconcile of a slot comes after the cache
// holds it, so after the cache has asked the API server.
func balanceObserver(c *cache.Cache, observe func(int, time.Duration), log logr.Logger) func(int, time.Duration) {
	const (
		unknown = iota
		on
		off
	)
	var state atomic.Int32
	return func(slot int, took time.Duration) {
		switch state.Load() {
		case on:
			observe(slot, took)
			return
		case off:
			return
		}
		if c.ServerFiltered() {
			if state.CompareAndSwap(unknown, on) {
				log.V(1).Info("Balancing slots by load")
			}
			observe(slot, took)
			return
		}
		if state.CompareAndSwap(unknown, off) {
			log.Info("Options.Sharding.Balance is on, but the API server does not filter the sharded types by shard selector (or one is sharded by sharding.ByControllerOwner): each slot move lists every object of the type, and that time would read as load. Balancing slots by count instead; turn Balance off, or enable the API server's ShardedListAndWatch feature")
		}
	}
}
