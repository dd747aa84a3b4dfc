package autoscale

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// queueDuration is the queue metrics' wait histogram (pkg/metrics).
const queueDuration = "workqueue_queue_duration_seconds"

// queueDepth is the queue metrics' depth gauge (pkg/metrics).
const queueDepth = "workqueue_depth"

// Sampler measures a replica's Load from the metrics its controllers
// already keep in the manager's registry: the queue wait histogram, the
// reconcile time histogram's sum and count, the workers gauge and the
// queue depth, of the controllers Controllers names. Each Sample covers
// the time since the one before. It is not safe for concurrent use.
//
// A key's wait is observed only when a worker takes it, so a window in
// which keys stay queued and none is taken observes nothing: its QueueP99
// is instead at least the age the keys still queued must have, by the
// depth and the takes of the windows before (see queued).
type Sampler struct {
	// Gatherer is the registry the controllers register with.
	Gatherer prometheus.Gatherer
	// Controllers names the controllers to measure, at each Sample.
	Controllers func() []string

	prev   totals
	prevAt time.Time
	// queued holds, oldest first, the keys the samples saw queued and
	// ready that no take since can have removed; their counts sum to at
	// most the last depth less the workers.
	queued []cohort
}

// cohort is n keys queued since at least since.
type cohort struct {
	since time.Time
	n     uint64
}

// totals are the cumulative figures of one gather.
type totals struct {
	buckets   []bucket // the queue waits, cumulative by upper bound
	busy      float64  // seconds spent reconciling
	reconcile uint64   // reconciles
}

type bucket struct {
	le    float64
	count uint64
}

// Sample returns the Load since the last Sample (since the process began,
// for the first).
func (s *Sampler) Sample(now time.Time) (Load, error) {
	mfs, err := s.Gatherer.Gather()
	if err != nil {
		return Load{}, fmt.Errorf("autoscale: gather metrics: %w", err)
	}
	names := s.Controllers()
	var t totals
	var workers float64
	var l Load
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if !slices.Contains(names, label(m, "controller")) {
				continue
			}
			switch mf.GetName() {
			case queueDuration:
				t.addBuckets(m.GetHistogram())
			case imetrics.ReconcileTime:
				t.busy += m.GetHistogram().GetSampleSum()
				t.reconcile += m.GetHistogram().GetSampleCount()
			case imetrics.MaxConcurrentReconciles:
				workers += m.GetGauge().GetValue()
			case queueDepth:
				l.Depth += int(m.GetGauge().GetValue())
			}
		}
	}
	d := t.minus(s.prev)
	if n := d.reconcile; n > 0 {
		l.ReconcileMean = seconds(d.busy / float64(n))
	}
	if window := now.Sub(s.prevAt).Seconds(); !s.prevAt.IsZero() && window > 0 && workers > 0 {
		l.Busy = math.Min(1, d.busy/(window*workers))
	}
	l.QueueP99 = seconds(quantile(0.99, d.buckets))
	ready := uint64(max(0, l.Depth-int(workers)))
	if age := s.age(now, d.taken(), ready); age > l.QueueP99 {
		l.QueueP99 = age
	}
	s.prev, s.prevAt = t, now
	return l, nil
}

// age updates s.queued with a window's takes and the keys ready at its
// end, and returns how long the oldest of those has at least waited.
//
// workqueue_depth also counts keys added again while a worker processes
// them, which wait for its Done, not for a worker: at most one a worker,
// so at least the depth less the workers are ready. Each take removes
// one ready key, and the oldest is assumed to go first, whatever order
// the queue hands them out in; keys that left untaken (a slot released)
// are assumed the oldest too. So the age is a lower bound: keys queued at
// a sample and too many to have been taken since have waited at least
// since it. A key that waited that long and was taken is in the window's
// histogram already.
func (s *Sampler) age(now time.Time, taken, ready uint64) time.Duration {
	left := s.left()
	// The takes, then the keys gone untaken.
	drop := max(taken, left-min(left, ready))
	for len(s.queued) > 0 && drop > 0 {
		n := min(drop, s.queued[0].n)
		s.queued[0].n -= n
		drop -= n
		if s.queued[0].n == 0 {
			s.queued = s.queued[1:]
		}
	}
	if left = s.left(); ready > left {
		s.queued = append(s.queued, cohort{since: now, n: ready - left})
	}
	if len(s.queued) == 0 {
		return 0
	}
	return now.Sub(s.queued[0].since)
}

// left counts the keys of s.queued.
func (s *Sampler) left() uint64 {
	var n uint64
	for _, c := range s.queued {
		n += c.n
	}
	return n
}

// taken returns the keys taken in the window: the wait observations.
func (t totals) taken() uint64 {
	if len(t.buckets) == 0 {
		return 0
	}
	return t.buckets[len(t.buckets)-1].count
}

func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// addBuckets adds h's buckets to t's; every queue's histogram has the
// same bounds.
func (t *totals) addBuckets(h *dto.Histogram) {
	for i, b := range h.GetBucket() {
		if i == len(t.buckets) {
			t.buckets = append(t.buckets, bucket{le: b.GetUpperBound()})
		}
		if t.buckets[i].le == b.GetUpperBound() {
			t.buckets[i].count += b.GetCumulativeCount()
		}
	}
	if n := len(t.buckets); n == 0 || !math.IsInf(t.buckets[n-1].le, 1) {
		t.buckets = append(t.buckets, bucket{le: math.Inf(1)})
	}
	t.buckets[len(t.buckets)-1].count += h.GetSampleCount()
}

// minus returns t less an earlier prev. A controller removed since makes
// a count go down: its part of the window is left out.
func (t totals) minus(prev totals) totals {
	d := totals{busy: t.busy - prev.busy}
	if t.reconcile >= prev.reconcile && d.busy >= 0 {
		d.reconcile = t.reconcile - prev.reconcile
	} else {
		d.busy = 0
	}
	for i, b := range t.buckets {
		c := b.count
		if i < len(prev.buckets) && prev.buckets[i].le == b.le && prev.buckets[i].count <= c {
			c -= prev.buckets[i].count
		}
		d.buckets = append(d.buckets, bucket{le: b.le, count: c})
	}
	return d
}

// quantile estimates the q-quantile of cumulative buckets as Prometheus's
// histogram_quantile does: linearly within the bucket it falls in, and
// the highest finite bound if it falls in the +Inf bucket. Where a bound
// is the objective (the default 1s is one), whether the estimate is
// above it is exact. 0 without observations.
func quantile(q float64, bs []bucket) float64 {
	if len(bs) == 0 || bs[len(bs)-1].count == 0 {
		return 0
	}
	rank := q * float64(bs[len(bs)-1].count)
	lower, below := 0.0, uint64(0)
	for _, b := range bs {
		if float64(b.count) >= rank {
			if math.IsInf(b.le, 1) {
				return lower
			}
			in := b.count - below
			if in == 0 {
				return b.le
			}
			return lower + (b.le-lower)*(rank-float64(below))/float64(in)
		}
		lower, below = b.le, b.count
	}
	return lower
}
