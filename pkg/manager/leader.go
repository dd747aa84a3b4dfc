package manager

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/opkit-dev/opkit/internal/fence"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// ErrFenced is wrapped by the error of a write refused because this
// process, though elected, is not sure it still holds its Lease: its last
// successful renewal is older than Options.LeaderElection.RenewDeadline
// (a GC pause, a frozen VM, a CPU limit, a partition). Every write sent
// with the context of a leader-only runnable (a controller's reconcile
// included) through a client built from Manager.Config is checked just
// before it is sent; controllers also stop starting reconciles until the
// next renewal. A reconcile that gets it is queued again without backoff
// and runs once the lease is renewed, or never here if it was lost. See
// CheckLeadership and docs/reliability.md.
//
// The renewal's age is measured on this process's monotonic clock, and
// RenewDeadline is shorter than the LeaseDuration a standby waits from
// the moment it saw that renewal. client-go's elector alone gives up
// RenewDeadline after its first failed try, so a process resumed after a
// freeze would go on acting beside the new leader for up to
// RenewDeadline. What a fence cannot do: recall a request already sent.
var ErrFenced = fence.ErrFenced

// CheckLeadership returns nil if ctx is not a leader-only runnable's (or
// reconcile's) context, or if this process may act as the leader now;
// otherwise an error wrapping ErrFenced. A leader-only runnable that acts
// by other means than writes through the manager's clients (calls to
// another system, say) asks before each act; its writes through
// Manager.Config's clients are checked for it.
func CheckLeadership(ctx context.Context) error { return fence.Check(ctx) }

// newLeaderGauge registers leader_election_master_status in reg for the Lease name, reading
// f.
func newLeaderGauge(reg prometheus.Registerer, name string, f *fence.Fence) error {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        imetrics.Leader,
		Help:        "1 while this process holds the leader election Lease of the label name and may act on it, else 0.",
		ConstLabels: prometheus.Labels{"name": name},
	}, func() float64 {
		if f.Open() {
			return 1
		}
		return 0
	})
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("manager: register %s: %w", imetrics.Leader, err)
	}
	return nil
}

// renewals is the election's lock, telling the fence of each renewal that
// succeeded: one the API server accepted with this process as holder, by
// optimistic concurrency on the Lease's resourceVersion, so that nobody
// else acquired the Lease in between.
type renewals struct {
	resourcelock.Interface
	fence *fence.Fence
}

func (l renewals) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := l.Interface.Create(ctx, rec)
	l.renewed(err, rec, sent)
	return err
}

func (l renewals) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := l.Interface.Update(ctx, rec)
	l.renewed(err, rec, sent)
	return err
}

func (l renewals) renewed(err error, rec resourcelock.LeaderElectionRecord, sent time.Time) {
	if err == nil && rec.HolderIdentity == l.Identity() {
		l.fence.Renewed(sent)
	}
}

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// leaseNamespace returns the Lease's namespace: the option, or the pod's.
func leaseNamespace(le LeaderElectionOptions) (string, error) {
	return namespaceOr("LeaderElection.Namespace", le.Namespace)
}

// namespaceOr returns ns, or the pod's own namespace if ns is empty; the
// error names field, the option to set outside a pod.
func namespaceOr(field, ns string) (string, error) {
	if ns != "" {
		return ns, nil
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return "", fmt.Errorf("%s is empty and this process is not in a pod (%w): set it", "Options."+field, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// elect campaigns for the lease in the background until ctx ends or the
// returned stop; once elected it calls lead. Losing the lease fails the
// run with ErrLeaderLost.
func (m *Manager) elect(ctx context.Context, lead func(), fail func(error)) (stopFunc, error) {
	le := m.opts.LeaderElection
	ns, err := leaseNamespace(le)
	if err != nil {
		return nil, fmt.Errorf("manager: leader election: %w", err)
	}
	id := le.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + uuid.NewString()
	}
	// A client of its own: busy controllers must not delay a renewal.
	cs, err := leaseClient(m.leaseConfig, "leader-election", le.RetryPeriod)
	if err != nil {
		return nil, fmt.Errorf("manager: leader election client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, le.Name,
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return nil, fmt.Errorf("manager: leader election lock: %w", err)
	}
	log := m.log.WithValues("lease", ns+"/"+le.Name, "identity", id)
	ctx, cancel := context.WithCancel(ctx)
	var leading atomic.Bool
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            renewals{Interface: lock, fence: m.fence},
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: le.ReleaseOnCancel,
		Name:            le.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				leading.Store(true)
				log.Info("Elected leader; starting leader-only runnables")
				lead()
			},
			OnStoppedLeading: func() {
				m.fence.Lost()
				if ctx.Err() != nil {
					if leading.Load() {
						log.Info("Left leadership on shutdown", "released", le.ReleaseOnCancel)
					}
					return
				}
				fail(fmt.Errorf("manager: lease %s/%s: %w: leader-only work stopped; restart the process to campaign again", ns, le.Name, ErrLeaderLost))
			},
			OnNewLeader: func(identity string) {
				if identity != id {
					log.Info("Another process leads", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("manager: leader election: %w", err)
	}
	log.Info("Campaigning for leadership")
	return goStop(cancel, "leader election still running", func() { elector.Run(ctx) }), nil
}
