package main

import (
	"flag"
	"os"
	"strings"
	"time"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// shardFlags are the flags of the manager's sharded mode
// (manager.ShardingOptions); an empty group leaves it off.
type shardFlags struct {
	group         string
	namespace     string
	identity      string
	slots         int
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	autoscale     string // the Deployment whose replicas follow the load
	// The autoscaler's tuning; 0 is the manager's default.
	queueLatency, upCooldown, downCooldown, interval time.Duration
	maxReplicas                                      int
}

func (s *shardFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.group, "shard-group", "", "share the Mirrors among the replicas run with the same group name (docs/sharding.md); empty: off. For more work than one replica keeps up with; --leader-elect is simpler otherwise")
	fs.StringVar(&s.namespace, "shard-namespace", "", "with --shard-group: namespace of the replicas' Leases; defaults to the pod's")
	fs.StringVar(&s.identity, "shard-identity", os.Getenv("POD_NAME"), "with --shard-group: this replica's name in the group, unique among live replicas; defaults to $POD_NAME, else the host name and random digits")
	fs.IntVar(&s.slots, "shard-slots", manager.DefaultSlots, "with --shard-group: number of slots, a power of two; the same on every replica")
	fs.DurationVar(&s.leaseDuration, "shard-lease-duration", manager.DefaultLeaseDuration, "with --shard-group: how long the others wait after a replica stops renewing before taking its slots")
	fs.DurationVar(&s.renewDeadline, "shard-renew-deadline", manager.DefaultRenewDeadline, "with --shard-group: how long after its last renewal a replica goes on starting reconciles; less than --shard-lease-duration")
	fs.StringVar(&s.autoscale, "shard-autoscale-deployment", "", "with --shard-group: set this Deployment's replicas (the operator's own, in --shard-namespace) from the queue latency the replicas measure (docs/sharding.md); empty: off")
	fs.DurationVar(&s.queueLatency, "shard-autoscale-queue-latency", 0, "with --shard-autoscale-deployment: the objective, each replica's p99 queue wait; 0: the manager's default (1s)")
	fs.IntVar(&s.maxReplicas, "shard-autoscale-max-replicas", 0, "with --shard-autoscale-deployment: the most replicas; 0: the manager's default (--shard-slots)")
	fs.DurationVar(&s.upCooldown, "shard-autoscale-up-cooldown", 0, "with --shard-autoscale-deployment: how long after a scale another scale-up waits; 0: the manager's default (1m)")
	fs.DurationVar(&s.downCooldown, "shard-autoscale-down-cooldown", 0, "with --shard-autoscale-deployment: how long the replicas must be calm before a scale-down; 0: the manager's default (5m)")
	fs.DurationVar(&s.interval, "shard-autoscale-interval", 0, "with --shard-autoscale-deployment: each measurement's window; 0: the manager's default (15s)")
	fs.DurationVar(&s.retryPeriod, "shard-retry-period", manager.DefaultRetryPeriod, "with --shard-group: how often a replica renews its Lease and reads the others'; less than --shard-renew-deadline")
}

// options are the manager's sharding options; the manager validates them
// (manager.New names the field of each invalid value).
func (s shardFlags) options() manager.ShardingOptions {
	return manager.ShardingOptions{
		Enabled: s.group != "", Group: s.group, Namespace: s.namespace, Identity: s.identity,
		Slots: s.slots, LeaseDuration: s.leaseDuration, RenewDeadline: s.renewDeadline, RetryPeriod: s.retryPeriod,
		Autoscale: manager.AutoscaleOptions{
			Enabled: s.autoscale != "", Name: s.autoscale, QueueLatency: s.queueLatency, MaxReplicas: s.maxReplicas,
			UpCooldown: s.upCooldown, DownCooldown: s.downCooldown, Interval: s.interval,
		},
	}
}

// shardFieldFlags names the flag of each sharding option in the manager's
// errors.
var shardFieldFlags = strings.NewReplacer(
	"Options.Sharding.Group", "--shard-group",
	"Options.Sharding.Namespace", "--shard-namespace",
	"Sharding.Namespace", "--shard-namespace",
	"Options.Sharding.Identity", "--shard-identity",
	"Options.Sharding.Slots", "--shard-slots",
	"Options.Sharding.LeaseDuration", "--shard-lease-duration",
	"Options.Sharding.RenewDeadline", "--shard-renew-deadline",
	"Options.Sharding.RetryPeriod", "--shard-retry-period",
	"Options.Sharding.Autoscale.Name", "--shard-autoscale-deployment",
	"Options.Sharding.Autoscale.QueueLatency", "--shard-autoscale-queue-latency",
	"Options.Sharding.Autoscale.UpCooldown", "--shard-autoscale-up-cooldown",
	"Options.Sharding.Autoscale.DownCooldown", "--shard-autoscale-down-cooldown",
	"Options.Sharding.Autoscale.Interval", "--shard-autoscale-interval",
	"than RenewDeadline", "than --shard-renew-deadline",
	"than RetryPeriod", "than --shard-retry-period",
)

// flagError is an error of manager.New told in the flags' words (words
// replaces each option's name by its flag's); it unwraps to the manager's
// error.
type flagError struct {
	err   error
	words *strings.Replacer
}

func (e flagError) Error() string { return e.words.Replace(e.err.Error()) }
func (e flagError) Unwrap() error { return e.err }

// inFlagWords returns err in the flags' words when sharding is on.
func (s shardFlags) inFlagWords(err error) error {
	if err == nil || s.group == "" {
		return err
	}
	return flagError{err, shardFieldFlags}
}
