package manager

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/internal/sharding/autoscale"
	"github.com/opkit-dev/opkit/internal/sharding/membership"
)

// AutoscaleOptions configure the sharded mode's autoscaler, which sets
// the replica count of the operator's own Deployment (or any resource
// with a scale subresource) from the load the replicas measure, with no
// metrics pipeline (docs/sharding.md, "A replica count that follows the
// load"):
//
//   - Each replica measures, over each Interval, the p99 of the time its
//     sharded controllers' keys waited in their queues, their mean
//     reconcile time and the share of their workers' time spent
//     reconciling, and publishes it in the membership Lease it renews
//     anyway (no write of its own).
//   - The replica holding slot 0 decides; one fenced, or losing the slot,
//     stops deciding, and a new decider waits UpCooldown first.
//   - A replica's p99 over QueueLatency scales up in proportion (p99 /
//     QueueLatency times the replicas), by at most MaxStep, once
//     UpCooldown has passed since the last scale. When every replica's
//     p99 has stayed within half QueueLatency, and their work would keep
//     one replica fewer at most 60% busy, for DownCooldown, it scales
//     down by one.
//   - It never scales while slots move, nor until they have rested for
//     two Intervals and a RetryPeriod (a replica gaining slots queues
//     all their keys at once, which says nothing of the load), nor while
//     the live members differ from the replicas asked for (for up to
//     DownCooldown), nor outside [MinReplicas, MaxReplicas]. Scale-downs rely on the
//     replica's graceful leave on SIGTERM, so dispatch stays exactly-once.
//
// It needs get and update on <resource>/scale of Target in the Leases'
// namespace. /readyz does not depend on it.
type AutoscaleOptions struct {
	// Enabled turns the autoscaler on. Defaults to false.
	Enabled bool
	// Resource is the kind of resource running the replicas. Defaults
	// to apps deployments.
	Resource schema.GroupResource
	// Name of the resource, in ShardingOptions.Namespace. Required when
	// Enabled.
	Name string
	// QueueLatency is the objective: each replica's p99 of queue waits.
	// Defaults to 1s.
	QueueLatency time.Duration
	// MinReplicas and MaxReplicas bound the count. Default to 1 and
	// ShardingOptions.Slots; MaxReplicas may not exceed the slots.
	MinReplicas, MaxReplicas int
	// MaxStep is the most replicas one scale-up adds. Defaults to 4, as
	// the HorizontalPodAutoscaler's default scale-up policy.
	MaxStep int
	// UpCooldown is how long after a scale another scale-up waits: for
	// the new replicas to start, join and take their slots, and for a
	// window to show their effect. Defaults to 1m.
	UpCooldown time.Duration
	// DownCooldown is how long the replicas must have been calm, and
	// the last scale ago, before a scale-down. Defaults to 5m, as the
	// HorizontalPodAutoscaler's scale-down stabilization window.
	DownCooldown time.Duration
	// Interval is the window of each measurement and the time between
	// decisions. Defaults to 15s, as the HorizontalPodAutoscaler's sync
	// period.
	Interval time.Duration
}

func (ao AutoscaleOptions) withDefaults(slots int) AutoscaleOptions {
	if ao.Resource.Empty() {
		ao.Resource = schema.GroupResource{Group: "apps", Resource: "deployments"}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&ao.QueueLatency, time.Second)
	def(&ao.UpCooldown, time.Minute)
	def(&ao.DownCooldown, 5*time.Minute)
	def(&ao.Interval, 15*time.Second)
	if ao.MinReplicas == 0 {
		ao.MinReplicas = 1
	}
	if ao.MaxReplicas == 0 {
		ao.MaxReplicas = slots
	}
	if ao.MaxStep == 0 {
		ao.MaxStep = 4
	}
	return ao
}

// validate returns the errors of the autoscaler's options, with the
// sharding options' defaults in so; none when it is off.
func (ao AutoscaleOptions) validate(so ShardingOptions) []error {
	if !ao.Enabled {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("Options.Sharding.Autoscale."+format, args...))
	}
	if ao.Name == "" {
		add("Name is empty: name the operator's Deployment (or the resource Resource names), whose replicas the autoscaler sets")
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"QueueLatency", ao.QueueLatency}, {"UpCooldown", ao.UpCooldown}, {"DownCooldown", ao.DownCooldown}, {"Interval", ao.Interval}} {
		if d.v < 0 {
			add("%s is %v: it must be 0 (the default) or positive", d.field, d.v)
		}
	}
	if ao.MinReplicas < 0 || ao.MaxReplicas < 0 || ao.MaxStep < 0 {
		add("MinReplicas (%d), MaxReplicas (%d) and MaxStep (%d) must be 0 (the default) or positive", ao.MinReplicas, ao.MaxReplicas, ao.MaxStep)
	}
	ao = ao.withDefaults(so.Slots)
	if ao.MaxReplicas > so.Slots || ao.MinReplicas > ao.MaxReplicas {
		add("MinReplicas (%d) and MaxReplicas (%d): want 1 ≤ MinReplicas ≤ MaxReplicas ≤ Slots (%d): a replica beyond the slots would hold none", ao.MinReplicas, ao.MaxReplicas, so.Slots)
	}
	return errs
}

// newAutoscaler builds the autoscaler of ShardingOptions.Autoscale for
// member s; nil when it is off. Its metrics go to the manager's registry.
func (m *Manager) newAutoscaler(s *sharded, ns string) (*autoscale.Recommender, error) {
	so := m.opts.Sharding
	ao := so.Autoscale.withDefaults(so.Slots)
	if !ao.Enabled {
		return nil, nil
	}
	r, err := autoscale.New(autoscale.Options{
		Policy: autoscale.Policy{
			Objective: ao.QueueLatency, Min: ao.MinReplicas, Max: ao.MaxReplicas, MaxStep: ao.MaxStep,
			UpCooldown: ao.UpCooldown, DownCooldown: ao.DownCooldown,
			// The window that saw slots move, and the renewal that
			// publishes the next, clean one.
			Rest: 2*ao.Interval + so.RetryPeriod,
		},
		Interval: ao.Interval,
		Member:   shardMember{s},
		Target: autoscale.ScaleTarget{
			Client: m.client, Mapper: m.mapper, Resource: ao.Resource, Namespace: ns, Name: ao.Name,
		},
		Sampler:    &autoscale.Sampler{Gatherer: m.registry, Controllers: m.controllerNames},
		Logger:     m.log.WithName("autoscale"),
		Registerer: m.registry,
	})
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	return r, nil
}

// shardMember is s's member, for the autoscaler, which is built before
// the member (whose Report is the autoscaler's).
type shardMember struct{ s *sharded }

func (sm shardMember) MayDispatch(slot int) bool { return sm.s.member.MayDispatch(slot) }
func (sm shardMember) View() membership.View     { return sm.s.member.View() }
