package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// else acquired the Lease in between. It records in seen what the last
// request found, for /readyz.
type renewals struct {
	resourcelock.Interface
	fence *fence.Fence
	seen  *leaseSeen
}

func (l renewals) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	holder := ""
	if rec != nil {
		holder = rec.HolderIdentity
	}
	if apierrors.IsNotFound(err) {
		l.seen.record("", nil) // an answer: the first candidate creates it
	} else {
		l.seen.record(holder, err)
	}
	return rec, raw, err
}

func (l renewals) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := l.Interface.Create(ctx, rec)
	l.renewed(err, rec, sent)
	return err
}

func (l renewals) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	if rec.HolderIdentity == "" {
		// A release (ReleaseOnCancel). client-go's elector releases the
		// Lease it has just read after judging, by the record it last
		// observed itself, that it holds it: after a renewal stuck past
		// RenewDeadline that record is stale, and the release would clear
		// the Lease of the process that took it meanwhile, which this one,
		// campaigning again, would then take at once.
		if holder, _, _ := l.seen.get(); holder != l.Identity() {
			return fmt.Errorf("lease %s is held by %q, not by %q: not releasing it", l.Describe(), holder, l.Identity())
		}
	}
	sent := time.Now()
	err := l.Interface.Update(ctx, rec)
	l.renewed(err, rec, sent)
	return err
}

func (l renewals) renewed(err error, rec resourcelock.LeaderElectionRecord, sent time.Time) {
	if err == nil && rec.HolderIdentity == l.Identity() {
		l.fence.Renewed(sent)
	}
	if err == nil || !apierrors.IsConflict(err) {
		// A conflict is a race lost to another candidate, not an outage.
		l.seen.record(rec.HolderIdentity, err)
	}
}

// leaseSeen is what the last request for the Lease found. Its methods are
// safe for concurrent use.
type leaseSeen struct {
	mu     sync.Mutex
	holder string // the holder the API server last reported or accepted
	err    error  // the last request's error; nil if it was answered
	since  time.Time
}

func (s *leaseSeen) record(holder string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.holder = holder
	}
	if (err == nil) != (s.err == nil) || s.since.IsZero() {
		s.since = time.Now()
	}
	s.err = err
}

// get returns the last holder seen, when the requests began to fail or to
// succeed, and the last request's error.
func (s *leaseSeen) get() (holder string, since time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holder, s.since, s.err
}

// leaderReady is the readiness check of leader election. It fails once
// the Lease's requests have failed for RenewDeadline (waiting for the API
// server, or refused by it), unless this process leads, and passes while
// it leads or stands by: a standby must be ready, or a rolling update whose
// new pod waits for the old one's lease would never progress, and the
// standby's webhooks would not be served. Its note says which state the
// process is in.
func (m *Manager) leaderReady(*http.Request) (string, error) {
	le := m.opts.LeaderElection
	holder, since, err := m.leaseSeen.get()
	switch {
	case m.fence.Open():
		return "leader", nil
	case err != nil && time.Since(since) >= le.RenewDeadline:
		state := "standing by"
		if holder == m.identity {
			state = "fenced: starting no reconcile"
		}
		waiting := "waiting for the API server"
		if refused(err) {
			waiting = "refused by the API server"
		}
		return "", fmt.Errorf("%s: Lease %s not read or renewed for %v (%s): %w",
			waiting, le.Name, time.Since(since).Round(time.Second), state, err)
	case holder == "" || holder == m.identity:
		return "campaigning for the Lease " + le.Name, nil
	}
	return fmt.Sprintf("standby: %s holds the Lease %s", holder, le.Name), nil
}

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// leaseNamespace returns the Lease's namespace: the option, or the pod's.
func leaseNamespace(le LeaderElectionOptions) (string, error) {
	return namespaceOr("LeaderElection.Namespace", le.Namespace)
}

// refused reports whether err is an answer of the API server that waiting
// will not change (such as 403 Forbidden for missing RBAC on leases),
// rather than none, a timeout or an overload.
func refused(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	return !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsInternalError(err) &&
		!apierrors.IsServiceUnavailable(err) && !apierrors.IsTooManyRequests(err) && !apierrors.IsUnexpectedServerError(err)
}

// identity is this candidate's: the option, or the host name and a random
// suffix.
func identity(le LeaderElectionOptions) string {
	if le.Identity != "" {
		return le.Identity
	}
	host, _ := os.Hostname()
	return host + "_" + uuid.NewString()
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
// returned stop; at the first election it calls lead. Losing the lease
// closes the fence and, unless Options.LeaderElection.ExitOnLoss, starts
// the campaign again: leader-only work waits at the fence until this
// process is elected again. With ExitOnLoss, losing it fails the run with
// ErrLeaderLost.
func (m *Manager) elect(ctx context.Context, lead func(), fail func(error)) (stopFunc, error) {
	le := m.opts.LeaderElection
	ns, err := leaseNamespace(le)
	if err != nil {
		return nil, fmt.Errorf("manager: leader election: %w", err)
	}
	// A client of its own: busy controllers must not delay a renewal.
	cs, err := leaseClient(m.leaseConfig, "leader-election", le.RetryPeriod)
	if err != nil {
		return nil, fmt.Errorf("manager: leader election client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, le.Name,
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: m.identity})
	if err != nil {
		return nil, fmt.Errorf("manager: leader election lock: %w", err)
	}
	c := &campaign{m: m, lease: ns + "/" + le.Name, lock: renewals{Interface: lock, fence: m.fence, seen: &m.leaseSeen},
		log: m.log.WithValues("lease", ns+"/"+le.Name, "identity", m.identity), fail: fail}
	c.lead = sync.OnceFunc(lead)
	ctx, cancel := context.WithCancel(ctx)
	// Built once, to fail Start on bad options rather than in the loop.
	elector, err := c.elector(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("manager: leader election: %w", err)
	}
	c.log.Info("Campaigning for leadership")
	return goStop(cancel, "leader election still running", func() { c.run(ctx, elector) }), nil
}

// campaign is one process's leader election: rounds of client-go's
// elector (acquire, renew until it fails), one after the other.
type campaign struct {
	m     *Manager
	lease string // namespace/name
	lock  resourcelock.Interface
	log   logr.Logger
	lead  func() // starts the leader-only runnables; called once
	fail  func(error)
}

// run runs rounds until ctx ends or, with ExitOnLoss, the lease is lost.
func (c *campaign) run(ctx context.Context, elector *leaderelection.LeaderElector) {
	for {
		lost := c.round(ctx, elector)
		if ctx.Err() != nil || !lost || c.m.opts.LeaderElection.ExitOnLoss {
			return
		}
		next, err := c.elector(ctx)
		if err != nil { // the options did not change: cannot happen
			c.fail(fmt.Errorf("manager: leader election: %w", err))
			return
		}
		elector = next
	}
}

// round runs elector until it stops leading or ctx ends, and reports
// whether it lost the lease.
func (c *campaign) round(ctx context.Context, elector *leaderelection.LeaderElector) (lost bool) {
	elector.Run(ctx)
	return ctx.Err() == nil
}

// elector returns a new elector for one round: client-go's Run may be
// called once per elector.
func (c *campaign) elector(ctx context.Context) (*leaderelection.LeaderElector, error) {
	le := c.m.opts.LeaderElection
	var leading atomic.Bool
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            c.lock,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: le.ReleaseOnCancel,
		Name:            le.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				leading.Store(true)
				c.log.Info("Elected leader; leader-only work may act")
				c.lead()
			},
			OnStoppedLeading: func() {
				c.m.fence.Lost()
				c.stopped(ctx, leading.Load())
			},
			OnNewLeader: func(identity string) {
				if identity != c.m.identity {
					c.log.Info("Another process leads", "leader", identity)
				}
			},
		},
	})
}

// stopped says why a round ended: ctx ended, or the lease was lost.
func (c *campaign) stopped(ctx context.Context, leading bool) {
	le := c.m.opts.LeaderElection
	switch {
	case ctx.Err() != nil:
		if leading {
			c.log.Info("Left leadership on shutdown", "released", le.ReleaseOnCancel)
		}
	case le.ExitOnLoss:
		c.fail(fmt.Errorf("manager: lease %s: %w: leader-only work stopped (Options.LeaderElection.ExitOnLoss)", c.lease, ErrLeaderLost))
	default:
		c.log.Info("Lost the lease: leader-only work waits at the fence; campaigning again")
	}
}
