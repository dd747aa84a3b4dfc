package manager

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// MetricLeader is 1 while this process holds the Lease named by its label
// "name", else 0: client-go's and controller-runtime's
// leader_election_master_status, which kubebuilder's dashboards read. Served
// only with Options.LeaderElection.Enabled; summed over the replicas, it
// is 1 when exactly one leads.
const MetricLeader = "leader_election_master_status"

// newLeaderGauge registers MetricLeader in reg, at 0 for the Lease name.
func newLeaderGauge(reg prometheus.Registerer, name string) (prometheus.Gauge, error) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricLeader,
		Help: "1 while this process holds the leader election Lease of the label name, else 0.",
	}, []string{"name"})
	if err := reg.Register(g); err != nil {
		return nil, fmt.Errorf("manager: register %s: %w", MetricLeader, err)
	}
	gauge := g.WithLabelValues(name)
	gauge.Set(0)
	return gauge, nil
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

// elect campaigns for the lease in the background; once elected it starts
// the leader-only runnables. Losing the lease fails the run with
// ErrLeaderLost.
func (r *run) elect(leaderOnly []Runnable) error {
	m := r.m
	le := m.opts.LeaderElection
	ns, err := leaseNamespace(le)
	if err != nil {
		return fmt.Errorf("manager: leader election: %w", err)
	}
	id := le.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + uuid.NewString()
	}
	// A clientset of its own, so that its rate limiter (if the config sets
	// one) is its own: a busy controller must not delay a renewal.
	cs, err := kubernetes.NewForConfig(rest.AddUserAgent(m.config, "leader-election"))
	if err != nil {
		return fmt.Errorf("manager: leader election client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, le.Name,
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("manager: leader election lock: %w", err)
	}
	log := m.log.WithValues("lease", ns+"/"+le.Name, "identity", id)
	var leading atomic.Bool
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: le.ReleaseOnCancel,
		Name:            le.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				leading.Store(true)
				m.leader.Set(1)
				log.Info("Elected leader; starting leader-only runnables")
				r.lead(leaderOnly)
			},
			OnStoppedLeading: func() {
				m.leader.Set(0)
				if r.electCtx.Err() != nil {
					if leading.Load() {
						log.Info("Left leadership on shutdown", "released", le.ReleaseOnCancel)
					}
					return
				}
				r.fail(fmt.Errorf("manager: lease %s/%s: %w: leader-only work stopped; restart the process to campaign again", ns, le.Name, ErrLeaderLost))
			},
			OnNewLeader: func(identity string) {
				if identity != id {
					log.Info("Another process leads", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("manager: leader election: %w", err)
	}
	log.Info("Campaigning for leadership")
	r.elector = make(chan struct{})
	go func() {
		defer close(r.elector)
		elector.Run(r.electCtx)
	}()
	return nil
}
