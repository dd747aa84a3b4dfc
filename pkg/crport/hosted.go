package crport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// hosted holds the controller-runtime manager each opkit manager hosts,
// until it stops.
var hosted sync.Map // *manager.Manager → *hostedManager

// ControllerRuntimeManager returns a controller-runtime manager that mgr
// hosts, for controller-runtime code that takes one and has no opkit
// counterpart: cert-controller's rotator.AddRotator, a library's
// controller, a controller not yet ported. Call it before mgr.Start; each
// call for one mgr returns the same manager, made on mgr's rest.Config
// (so under mgr's API budget and fence) with mgr's scheme and mgr's logger
// named "controller-runtime", and started and stopped by mgr.
//
//   - What controller-runtime runs only on the leader (a controller, or a
//     runnable that does not say NeedLeaderElection false) is added to mgr
//     as a leader-only runnable: it starts once mgr is elected, and its
//     writes through the hosted manager's clients with the context it is
//     given (a reconcile's included) are fenced as opkit's own are
//     (manager.ErrFenced). While mgr rides out a lost lease, a hosted
//     controller goes on starting reconciles, whose writes are refused.
//     Add after mgr.Start fails.
//   - Its cache and what runs on every replica start with mgr.
//   - Elected is mgr.Elected(); AddHealthzCheck and AddReadyzCheck add to
//     mgr's /healthz and /readyz; GetWebhookServer is mgr's webhook
//     server, each handler registered on it behind mgr.GuardWebhook, when
//     mgr serves webhooks (and controller-runtime's default server, on
//     port 9443, when it does not).
//   - It serves no metrics or probes of its own: the metrics of what it
//     runs (controller-runtime's controller_runtime_* series) are not on
//     mgr's /metrics, and AddMetricsServerExtraHandler fails.
//   - Its cache is its own: a type that both it and mgr's cache read is
//     listed and watched, and held in memory, twice.
//   - Its Start fails: mgr starts it.
func ControllerRuntimeManager(mgr *manager.Manager) (ctrl.Manager, error) {
	if mgr == nil {
		return nil, errors.New("crport: ControllerRuntimeManager: the manager is nil")
	}
	if h, ok := hosted.Load(mgr); ok {
		return h.(*hostedManager), nil
	}
	cr, err := ctrl.NewManager(mgr.Config(), ctrl.Options{
		Scheme:                 mgr.Scheme(),
		Logger:                 mgr.Logger().WithName("controller-runtime"),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, fmt.Errorf("crport: a controller-runtime manager for opkit's: %w", err)
	}
	h := &hostedManager{Manager: cr, mgr: mgr}
	if actual, loaded := hosted.LoadOrStore(mgr, h); loaded {
		return actual.(*hostedManager), nil
	}
	if err := mgr.Add(hostRunnable{h}); err != nil {
		hosted.Delete(mgr)
		return nil, fmt.Errorf("crport: ControllerRuntimeManager: %w", err)
	}
	return h, nil
}

// MustControllerRuntimeManager is ControllerRuntimeManager where the
// controller-runtime manager was one expression, such as an argument of
// cert-controller's rotator.AddRotator. It panics if the manager cannot be
// made or mgr has started, as a setup stops on any other error.
func MustControllerRuntimeManager(mgr *manager.Manager) ctrl.Manager {
	h, err := ControllerRuntimeManager(mgr)
	if err != nil {
		panic(err.Error())
	}
	return h
}

// hostedManager is controller-runtime's manager with what opkit's manager
// does in its place.
type hostedManager struct {
	crmanager.Manager
	mgr *manager.Manager
}

// Add runs r as controller-runtime would: on the leader only, unless it
// is a cache, a server, or says it needs no leader.
func (h *hostedManager) Add(r crmanager.Runnable) error {
	if !needsLeader(r) {
		return h.Manager.Add(r)
	}
	return h.mgr.Add(leaderOnly{r})
}

// needsLeader is controller-runtime's rule (manager's runnables.Add).
func needsLeader(r crmanager.Runnable) bool {
	switch r := r.(type) {
	case *crmanager.Server:
		return r.NeedLeaderElection()
	case interface{ GetCache() crcache.Cache }, crwebhook.Server:
		return false
	case crmanager.LeaderElectionRunnable:
		return r.NeedLeaderElection()
	}
	return true
}

func (h *hostedManager) Elected() <-chan struct{} { return h.mgr.Elected() }

func (h *hostedManager) AddHealthzCheck(name string, check healthz.Checker) error {
	return h.mgr.AddHealthCheck(name, check)
}

func (h *hostedManager) AddReadyzCheck(name string, check healthz.Checker) error {
	return h.mgr.AddReadyCheck(name, check)
}

func (h *hostedManager) GetWebhookServer() crwebhook.Server {
	if s := h.mgr.WebhookServer(); s != nil {
		return guarded{s, h.mgr}
	}
	return h.Manager.GetWebhookServer()
}

func (h *hostedManager) AddMetricsServerExtraHandler(path string, _ http.Handler) error {
	return fmt.Errorf("crport: AddMetricsServerExtraHandler(%q): a hosted controller-runtime manager serves no metrics: serve the handler on a server of your own", path)
}

func (h *hostedManager) Start(context.Context) error {
	return errors.New("crport: a hosted controller-runtime manager is started by opkit's manager: call its Start instead")
}

// hostRunnable starts the hosted manager on every replica, with mgr.
type hostRunnable struct{ h *hostedManager }

func (r hostRunnable) Start(ctx context.Context) error {
	defer hosted.Delete(r.h.mgr)
	return r.h.Manager.Start(ctx)
}

func (hostRunnable) NeedLeaderElection() bool { return false }

func (hostRunnable) String() string { return "the hosted controller-runtime manager" }

// leaderOnly is a controller-runtime runnable run by opkit's manager on
// the leader: it hides the runnable's own NeedLeaderElection.
type leaderOnly struct{ r crmanager.Runnable }

func (l leaderOnly) Start(ctx context.Context) error { return l.r.Start(ctx) }

func (l leaderOnly) String() string { return fmt.Sprintf("controller-runtime %T", l.r) }

// guarded is opkit's webhook server, whose handlers are registered behind
// the manager's guard.
type guarded struct {
	crwebhook.Server
	mgr *manager.Manager
}

func (g guarded) Register(path string, h http.Handler) {
	g.Server.Register(path, g.mgr.GuardWebhook(h))
}
