package main

import (
	"flag"
	"strings"
	"time"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// leaderFlags are the flags of leader election
// (manager.LeaderElectionOptions), named as component-base names them.
type leaderFlags struct {
	elect         bool
	namespace     string
	name          string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	exitOnLoss    bool
}

func (l *leaderFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&l.elect, "leader-elect", false, "run only while holding a Lease, so that replicas take over from each other: for one active replica and warm standbys (see --shard-group to share the work)")
	fs.StringVar(&l.namespace, "leader-election-namespace", "", "namespace of the Lease; defaults to the pod's")
	fs.StringVar(&l.name, "leader-election-id", "mirror-operator", "name of the Lease")
	fs.DurationVar(&l.leaseDuration, "leader-elect-lease-duration", manager.DefaultLeaseDuration, "with --leader-elect: how long a standby waits after the leader last renewed before it takes over; whole seconds")
	fs.DurationVar(&l.renewDeadline, "leader-elect-renew-deadline", manager.DefaultRenewDeadline, "with --leader-elect: how long the leader tries to renew before it gives the Lease up; less than --leader-elect-lease-duration")
	fs.DurationVar(&l.retryPeriod, "leader-elect-retry-period", manager.DefaultRetryPeriod, "with --leader-elect: the time between tries to acquire or renew the Lease; less than --leader-elect-renew-deadline")
	fs.BoolVar(&l.exitOnLoss, "leader-elect-exit-on-loss", false, "with --leader-elect: exit when the Lease is lost, as controller-runtime's operators do; by default the operator stays up, acts on nothing and campaigns again, keeping its caches and queues (a restart relists them)")
}

// options are the manager's leader election options; the manager
// validates them (manager.New names the field of each invalid value). The
// Lease is released on a graceful stop, so that a standby takes over at
// once.
func (l leaderFlags) options() manager.LeaderElectionOptions {
	return manager.LeaderElectionOptions{
		Enabled: l.elect, Name: l.name, Namespace: l.namespace, ReleaseOnCancel: true,
		LeaseDuration: l.leaseDuration, RenewDeadline: l.renewDeadline, RetryPeriod: l.retryPeriod,
		ExitOnLoss: l.exitOnLoss,
	}
}

// leaderFieldFlags names the flag of each leader election option in the
// manager's errors (Namespace before Name, its prefix).
var leaderFieldFlags = strings.NewReplacer(
	"Options.LeaderElection.Namespace", "--leader-election-namespace",
	"Options.LeaderElection.Name", "--leader-election-id",
	"Options.LeaderElection.LeaseDuration", "--leader-elect-lease-duration",
	"Options.LeaderElection.RenewDeadline", "--leader-elect-renew-deadline",
	"Options.LeaderElection.RetryPeriod", "--leader-elect-retry-period",
	"than RenewDeadline", "than --leader-elect-renew-deadline",
	"than RetryPeriod", "than --leader-elect-retry-period",
)

// inFlagWords returns err in the flags' words when leader election is on.
func (l leaderFlags) inFlagWords(err error) error {
	if err == nil || !l.elect {
		return err
	}
	return flagError{err, leaderFieldFlags}
}
