package dispatch

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/internal/sharding/membership"
)

// Metric names.
const (
	// MetricDispatchSkipped counts, per controller and reason, the keys a
	// worker took and did not reconcile.
	MetricDispatchSkipped = "opkit_sharding_dispatch_skipped_total"
	// MetricSlotsHeld is the number of slots this replica holds now.
	MetricSlotsHeld = "opkit_sharding_slots_held"
	// MetricMembers is the number of live members, this one included, at
	// the last successful round; 0 before the first.
	MetricMembers = "opkit_sharding_members"
	// MetricHandovers counts the slots this replica came to hold while
	// another member claimed them.
	MetricHandovers = "opkit_sharding_handovers_total"
	// MetricLastTakeover is, for the last handover, the seconds from
	// first wanting the slot to holding it.
	MetricLastTakeover = "opkit_sharding_last_takeover_seconds"
	// MetricCacheSetSlotsErrors counts the failed calls of a split
	// cache's SetSlots (Options.Cache), each retried with backoff.
	MetricCacheSetSlotsErrors = "opkit_sharding_cache_set_slots_errors_total"
)

// Reasons of MetricDispatchSkipped.
const (
	// ReasonNotHeld: another replica holds the key's slot.
	ReasonNotHeld = "not_held"
	// ReasonSlotUnknown: the key's object is not cached yet; retried.
	ReasonSlotUnknown = "slot_unknown"
	// ReasonSlotUnknownDropped: still unknown after MaxUnknownRetries.
	ReasonSlotUnknownDropped = "slot_unknown_dropped"
	// ReasonSlotNotCached: the slot is held, but the split cache
	// (Options.Cache) does not hold its objects yet; retried.
	ReasonSlotNotCached = "slot_not_cached"
	// ReasonFenced: the slot is held, but this replica's last successful
	// renewal is older than the renew deadline; retried.
	ReasonFenced = "fenced"
)

// newSkipped registers MetricDispatchSkipped with reg, or returns the one
// registered already; with a nil reg, an unregistered one.
func newSkipped(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricDispatchSkipped,
		Help: "Keys a sharded controller's worker took and did not reconcile, per controller and reason: not_held (another replica holds the slot), slot_unknown (retried with backoff), slot_unknown_dropped, slot_not_cached (retried with backoff), fenced (held, but renewals are late; retried with backoff).",
	}, []string{"controller", "reason"})
	if reg == nil {
		return c, nil
	}
	if err := reg.Register(c); err != nil {
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing, nil
			}
		}
		return nil, fmt.Errorf("register %s: %w", MetricDispatchSkipped, err)
	}
	return c, nil
}

// newSetSlotsErrors registers MetricCacheSetSlotsErrors with reg; with a
// nil reg, an unregistered one.
func newSetSlotsErrors(reg prometheus.Registerer) (prometheus.Counter, error) {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: MetricCacheSetSlotsErrors,
		Help: "Failed calls of the split cache's SetSlots; each is retried with backoff, and the slots it would have added are not dispatched meanwhile.",
	})
	if reg == nil {
		return c, nil
	}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("register %s: %w", MetricCacheSetSlotsErrors, err)
	}
	return c, nil
}

// RegisterMemberMetrics registers with reg the metrics of a member's
// Stats, read at each scrape: MetricSlotsHeld, MetricMembers,
// MetricHandovers and MetricLastTakeover.
func RegisterMemberMetrics(reg prometheus.Registerer, stats func() membership.Stats) error {
	gauge := func(name, help string, v func(membership.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(stats()) })
	}
	cs := []prometheus.Collector{
		gauge(MetricSlotsHeld, "Slots this replica holds now.", func(s membership.Stats) float64 { return float64(s.Held) }),
		gauge(MetricMembers, "Live members of the shard group, this one included, at the last successful round.", func(s membership.Stats) float64 { return float64(s.Members) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: MetricHandovers, Help: "Slots this replica came to hold while another member claimed them."},
			func() float64 { return float64(stats().Handovers) }),
		gauge(MetricLastTakeover, "Seconds from first wanting the last handed-over slot to holding it.", func(s membership.Stats) float64 { return s.LastTakeover.Seconds() }),
	}
	var errs []error
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("register sharding metrics: %w", err)
	}
	return nil
}
