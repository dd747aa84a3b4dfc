package dispatch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// SlotCache is a cache split by slots: its sharded types hold only the
// objects of the slots last given to SetSlots. *cache.Cache implements it.
type SlotCache interface {
	// SetSlots returns once the cache holds exactly slots, or fails; on
	// failure it holds, for sure, the slots both the old and the new set
	// have.
	SetSlots(ctx context.Context, slots []int) error
}

// Defaults of Options.
const (
	DefaultMinBackoff = 500 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
)

// cachedLocked reports whether the cache holds slot's objects for sure,
// or is not split; d.mu held.
func (d *Dispatcher) cachedLocked(slot int) bool {
	return d.opts.Cache == nil || d.cached[slot]
}

// wantLocked records that the cache must hold slots, and that their keys
// are queued once it does. d.mu held.
func (d *Dispatcher) wantLocked(slots []int) {
	now := d.opts.Clock.Now()
	for _, s := range slots {
		d.want[s] = true
		d.toQueue[s] = true
		d.gained[s] = now
	}
	d.kickLocked()
}

// unwantLocked records that the cache may drop slots, which from now on
// it may do at any time: they are no longer cached for sure, even if held
// again before it does. d.mu held.
func (d *Dispatcher) unwantLocked(slots []int) {
	for _, s := range slots {
		delete(d.want, s)
		delete(d.toQueue, s)
		delete(d.cached, s)
		delete(d.gained, s)
	}
	d.kickLocked()
}

func (d *Dispatcher) kickLocked() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Run keeps Options.Cache holding the slots this replica holds or is
// releasing, until ctx ends: it calls SetSlots after each change, and,
// once the cache holds a slot Held gained, queues the slot's keys. A
// failed SetSlots is retried with backoff (Options.MinBackoff doubling up
// to MaxBackoff), counted (imetrics.ShardingCacheSetSlotsErrors) and
// reported by CacheReady; meanwhile the keys of slots the cache may not hold are
// refused with Retry. Without Options.Cache it returns at once. Run it
// beside the member, from before the member's first Held.
func (d *Dispatcher) Run(ctx context.Context) {
	if d.opts.Cache == nil {
		return
	}
	backoff := d.opts.MinBackoff
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.kick:
		}
		for {
			err := d.syncCache(ctx)
			if err == nil {
				backoff = d.opts.MinBackoff
				break
			}
			if ctx.Err() != nil {
				return
			}
			d.setSlotsErrors.Inc()
			d.opts.Logger.Error(err, "Cannot make the cache hold this replica's slots; their keys wait until it does", "retryIn", backoff)
			select {
			case <-ctx.Done():
				return
			case <-d.opts.Clock.After(backoff):
			}
			backoff = min(2*backoff, d.opts.MaxBackoff)
		}
	}
}

// syncCache makes the cache hold d.want, unless it does already, then
// queues the keys of slots gained that it now holds.
//
// Invariant, between syncs: cached is the slots of the last successful
// SetSlots (set) that are still wanted. A slot unwanted since may be
// dropped by the next SetSlots, so it is not cached even if wanted again
// meanwhile; the next sync marks it cached again, at once if the cache
// still holds it (set) and nothing else changed.
func (d *Dispatcher) syncCache(ctx context.Context) error {
	d.mu.Lock()
	want := slices.Sorted(maps.Keys(d.want))
	current := d.syncErr == nil && slices.Equal(want, d.set)
	d.mu.Unlock()
	if !current {
		err := d.opts.Cache.SetSlots(ctx, want)
		d.mu.Lock()
		if err != nil {
			// Only the slots of both sets are held for sure.
			maps.DeleteFunc(d.cached, func(s int, _ bool) bool { return !slices.Contains(want, s) })
			d.syncErr = fmt.Errorf("set the cache's slots to %v: %w", want, err)
			err = d.syncErr
			d.mu.Unlock()
			return err
		}
		d.set, d.syncErr = want, nil
		d.mu.Unlock()
	}
	d.mu.Lock()
	d.cached = map[int]bool{}
	for _, s := range d.set {
		if d.want[s] {
			d.cached[s] = true
		}
	}
	d.mu.Unlock()
	d.queueCached()
	return nil
}

// queueCached queues, on each controller's queue, the keys of the slots
// gained whose objects the cache now holds.
func (d *Dispatcher) queueCached() {
	d.mu.Lock()
	ready := map[int]bool{}
	now := d.opts.Clock.Now()
	for s := range d.toQueue {
		if d.cached[s] {
			ready[s] = true
			delete(d.toQueue, s)
			d.slotSync.Observe(now.Sub(d.gained[s]).Seconds())
			delete(d.gained, s)
		}
	}
	owners := d.owners
	d.mu.Unlock()
	if len(ready) == 0 {
		return
	}
	for _, o := range owners {
		o.queueSlots(ready)
	}
}

// CacheReady returns nil once Options.Cache holds every slot this replica
// holds or is releasing, and an error saying which it lacks, and why,
// before. Without Options.Cache it returns nil.
func (d *Dispatcher) CacheReady() error {
	if d.opts.Cache == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var missing []int
	for s := range d.want {
		if !d.cached[s] {
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	if d.syncErr != nil {
		return fmt.Errorf("the cache does not hold slots %v yet: %w", missing, d.syncErr)
	}
	return fmt.Errorf("the cache does not hold slots %v yet: their objects are being listed", missing)
}

// Cached returns the slots the cache holds for sure, sorted: those of
// the last successful SetSlots, less those a failed one since may have
// dropped. Without Options.Cache it returns nil.
func (d *Dispatcher) Cached() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.cached))
}
