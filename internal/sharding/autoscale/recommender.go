package autoscale

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/internal/sharding/membership"
)

// DecidingSlot is the slot whose holder decides: one member at most
// holds it at any instant (package membership's guarantee), and a fenced
// member no longer may dispatch it.
const DecidingSlot = 0

// Member is what the Recommender needs of a membership.Member.
type Member interface {
	MayDispatch(slot int) bool
	View() membership.View
}

// Target is the scalable resource running the replicas.
type Target interface {
	// Replicas returns its spec.replicas.
	Replicas(ctx context.Context) (int, error)
	// Scale sets its spec.replicas to n, on condition that it was from
	// as Replicas last read it (a conflict error otherwise).
	Scale(ctx context.Context, from, n int) error
}

// Options configure a Recommender. Every field is required but Clock,
// Logger and Registerer.
type Options struct {
	Policy   Policy
	Interval time.Duration // between samples and decisions
	Member   Member
	Target   Target
	Sampler  *Sampler
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Logger defaults to logr.Discard().
	Logger logr.Logger
	// Registerer receives the metrics; nil for none.
	Registerer prometheus.Registerer
}

// Recommender samples this replica's load every Interval, publishes it
// through Report, and, while this replica holds DecidingSlot, decides the
// replica count and scales Target.
type Recommender struct {
	opts   Options
	report atomic.Pointer[string]

	p99, recommended prometheus.Gauge
	scales           *prometheus.CounterVec

	// The loop's own.
	state    State
	deciding bool
}

// New returns a Recommender, its metrics registered.
func New(opts Options) (*Recommender, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	r := &Recommender{
		opts: opts,
		p99: prometheus.NewGauge(prometheus.GaugeOpts{Name: imetrics.ShardingQueueWaitP99,
			Help: "p99 of the time keys of this replica's sharded controllers waited in their queues, over the autoscaler's last window."}),
		recommended: prometheus.NewGauge(prometheus.GaugeOpts{Name: imetrics.ShardingRecommendedReplicas,
			Help: "The replica count the autoscaler wants, on the replica that decides; 0 on the others."}),
		scales: prometheus.NewCounterVec(prometheus.CounterOpts{Name: imetrics.ShardingScales,
			Help: "Scales the autoscaler made from this replica, by direction and reason."}, []string{"direction", "reason"}),
	}
	for _, dr := range [][2]string{{"up", ReasonLatency}, {"up", ReasonMin}, {"down", ReasonCalm}, {"down", ReasonMax}} {
		r.scales.WithLabelValues(dr[0], dr[1])
	}
	if reg := opts.Registerer; reg != nil {
		var errs []error
		for _, c := range []prometheus.Collector{r.p99, r.recommended, r.scales} {
			errs = append(errs, reg.Register(c))
		}
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("autoscale: register metrics: %w", err)
		}
	}
	return r, nil
}

// Report returns this replica's last Load, for membership.Options.Report;
// "" before the first sample. It never blocks.
func (r *Recommender) Report() string {
	if s := r.report.Load(); s != nil {
		return *s
	}
	return ""
}

// Run samples and decides every Interval until ctx ends. It must run
// once.
func (r *Recommender) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.opts.Clock.After(r.opts.Interval):
		}
		r.tick(ctx)
	}
}

func (r *Recommender) tick(ctx context.Context) {
	log := r.opts.Logger
	now := r.opts.Clock.Now()
	if l, err := r.opts.Sampler.Sample(now); err != nil {
		log.Info("Measuring this replica's load failed", "error", err.Error())
	} else {
		s := l.String()
		r.report.Store(&s)
		r.p99.Set(l.QueueP99.Seconds())
	}
	if !r.opts.Member.MayDispatch(DecidingSlot) {
		if r.deciding {
			log.Info("Stopped deciding the replica count: this replica no longer holds the deciding slot", "slot", DecidingSlot)
			r.recommended.Set(0)
		}
		r.deciding = false
		return
	}
	if !r.deciding {
		// A new decider knows nothing of the last scale: it waits a
		// cool-down, as if it had just scaled.
		r.state, r.deciding = State{Since: now}, true
		log.Info("Deciding the replica count", "slot", DecidingSlot)
	}
	r.decide(ctx, now)
}

func (r *Recommender) decide(ctx context.Context, now time.Time) {
	log := r.opts.Logger
	v := r.opts.Member.View()
	replicas, err := r.opts.Target.Replicas(ctx)
	if err != nil {
		log.Info("Reading the replica count failed", "error", err.Error())
		return
	}
	in := Input{Now: now, Replicas: replicas, Loads: loads(v.Reports), Settled: v.Settled}
	d, st := Decide(r.opts.Policy, in, r.state)
	r.recommended.Set(float64(d.Replicas))
	if d.Replicas == replicas {
		r.state = st
		log.V(1).Info("Holding the replica count", "replicas", replicas, "reason", d.Reason, "p99", d.P99.String(),
			"members", len(in.Loads), "settled", in.Settled)
		return
	}
	// The slot may have gone while the scale was read.
	if !r.opts.Member.MayDispatch(DecidingSlot) {
		return
	}
	if err := r.opts.Target.Scale(ctx, replicas, d.Replicas); err != nil {
		log.Info("Scaling the operator failed", "from", replicas, "to", d.Replicas, "reason", d.Reason, "error", err.Error())
		return
	}
	r.state = st
	dir := "up"
	if d.Replicas < replicas {
		dir = "down"
	}
	r.scales.WithLabelValues(dir, d.Reason).Inc()
	log.Info("Scaled the operator", "from", replicas, "to", d.Replicas, "reason", d.Reason,
		"p99", d.P99.String(), "objective", r.opts.Policy.Objective.String(), "members", len(in.Loads))
}

// loads parses the members' reports; a report that does not parse (or
// none yet) is a nil Load, which never counts as calm.
func loads(reports map[string]string) map[string]*Load {
	out := make(map[string]*Load, len(reports))
	for id, s := range reports {
		if l, err := ParseLoad(s); err == nil {
			out[id] = &l
		} else {
			out[id] = nil
		}
	}
	return out
}
