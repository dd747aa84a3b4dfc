package dispatch

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/internal/sharding/membership"
)

// newSkipped registers imetrics.ShardingDispatchSkipped with reg, or
// returns the one registered already; with a nil reg, an unregistered one.
func newSkipped(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: imetrics.ShardingDispatchSkipped,
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
		return nil, fmt.Errorf("register %s: %w", imetrics.ShardingDispatchSkipped, err)
	}
	return c, nil
}

// newSetSlotsErrors registers imetrics.ShardingCacheSetSlotsErrors with
// reg; with a nil reg, an unregistered one.
func newSetSlotsErrors(reg prometheus.Registerer) (prometheus.Counter, error) {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: imetrics.ShardingCacheSetSlotsErrors,
		Help: "Failed calls of the split cache's SetSlots; each is retried with backoff, and the slots it would have added are not dispatched meanwhile.",
	})
	if reg == nil {
		return c, nil
	}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("register %s: %w", imetrics.ShardingCacheSetSlotsErrors, err)
	}
	return c, nil
}

// newSlotSync registers imetrics.ShardingSlotSync with reg; with a nil
// reg, an unregistered one.
func newSlotSync(reg prometheus.Registerer) (prometheus.Histogram, error) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    imetrics.ShardingSlotSync,
		Help:    "Seconds from this replica coming to hold a slot to its split cache holding the slot's objects and the slot's keys queued; the slot's keys wait meanwhile.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	})
	if reg == nil {
		return h, nil
	}
	if err := reg.Register(h); err != nil {
		return nil, fmt.Errorf("register %s: %w", imetrics.ShardingSlotSync, err)
	}
	return h, nil
}

// RegisterMemberMetrics registers with reg the metrics of a member's
// Stats, read at each scrape: imetrics.ShardingSlotsHeld, ShardingMembers,
// ShardingHandovers and ShardingLastTakeover.
func RegisterMemberMetrics(reg prometheus.Registerer, stats func() membership.Stats) error {
	gauge := func(name, help string, v func(membership.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(stats()) })
	}
	cs := []prometheus.Collector{
		gauge(imetrics.ShardingSlotsHeld, "Slots this replica holds now.", func(s membership.Stats) float64 { return float64(s.Held) }),
		gauge(imetrics.ShardingMembers, "Live members of the shard group, this one included, at the last successful round.", func(s membership.Stats) float64 { return float64(s.Members) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: imetrics.ShardingHandovers, Help: "Slots this replica came to hold while another member claimed them."},
			func() float64 { return float64(stats().Handovers) }),
		gauge(imetrics.ShardingLastTakeover, "Seconds from first wanting the last handed-over slot to holding it.", func(s membership.Stats) float64 { return s.LastTakeover.Seconds() }),
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
