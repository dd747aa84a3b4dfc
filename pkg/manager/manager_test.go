package manager_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

var widgetGVK = schema.GroupVersionKind{Group: "test.opkit.dev", Version: "v1", Kind: "Widget"}

// Probes are served before the cache syncs; readiness fails, naming the
// type not synced, until it does; runnables start only after it has.
func TestStartOrderAndReadiness(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{})
	if _, err := cache.Unstructured(m.Cache(), widgetGVK, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	var startedAt atomic.Pointer[time.Time]
	var syncedAtStart atomic.Bool
	if err := m.Add(manager.RunnableFunc(func(ctx context.Context) error {
		now := time.Now()
		startedAt.Store(&now)
		syncedAtStart.Store(m.Cache().Status()[0].Synced)
		<-ctx.Done()
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	start(t, m)
	probes := "http://" + m.HealthProbeAddr()
	if code, body := get(t, probes+"/healthz"); code != 200 || body != "ok" {
		t.Errorf("/healthz = %d %q, want 200 ok", code, body)
	}
	eventually(t, "readiness to name the missing CRD", func() bool {
		code, body := get(t, probes+"/readyz")
		return code == 500 && strings.Contains(body, "[-]cache-sync failed") && strings.Contains(body, "Widget") && strings.Contains(body, "CRD")
	})
	if startedAt.Load() != nil {
		t.Fatal("a runnable started before the cache synced")
	}

	crds, err := envtest.InstallCRDs(env.Config(), envtest.CRDInstallOptions{Paths: []string{"testdata/crds"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := envtest.UninstallCRDs(env.Config(), envtest.CRDInstallOptions{CRDs: crds}); err != nil {
			t.Errorf("uninstall CRDs: %v", err)
		}
	})
	eventually(t, "readiness once the CRD is installed", func() bool { code, _ := get(t, probes+"/readyz"); return code == 200 })
	eventually(t, "the runnable to start", func() bool { return startedAt.Load() != nil })
	if !syncedAtStart.Load() {
		t.Error("the runnable started before the cache synced")
	}
	if code, body := get(t, probes+"/readyz?verbose"); code != 200 || !strings.Contains(body, "[+]cache-sync ok") {
		t.Errorf("/readyz?verbose = %d %q", code, body)
	}
}

// Metrics are served over HTTP with the reconcile, workqueue, cache, REST
// client and Go series.
func TestMetricsEndpoint(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{})
	var reconciled atomic.Int32
	_, err := manager.NewController(m, "metrics-test", reconcile.Func[reconcile.Request](func(context.Context, reconcile.Request) (reconcile.Result, error) {
		reconciled.Add(1)
		return reconcile.Done(), nil
	}), manager.For[*corev1.ConfigMap](nil))
	if err != nil {
		t.Fatal(err)
	}
	start(t, m)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}}
	if err := m.UncachedClient().Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a reconcile", func() bool { return reconciled.Load() > 0 })
	code, body := get(t, "http://"+m.MetricsAddr()+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{
		`controller_runtime_reconcile_total{controller="metrics-test",result="success"}`,
		// One worker and, by default, one spare (controller.Options.SpareWorkers).
		`controller_runtime_max_concurrent_reconciles{controller="metrics-test"} 2`,
		`workqueue_adds_total{controller="metrics-test",name="metrics-test"}`,
		`workqueue_depth{controller="metrics-test",name="metrics-test",priority=`,
		`opkit_cache_objects{form="typed",group="",kind="ConfigMap"`,
		`rest_client_requests_total{code="201",host=`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A stop waits for the reconcile in flight, whose context stays live, and
// Start returns nil.
func TestGracefulShutdown(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{ShutdownTimeout: 20 * time.Second})
	inFlight := make(chan struct{})
	var finished atomic.Bool
	var ctxErr atomic.Pointer[error]
	_, err := manager.NewController(m, "slow", reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if req.Name != "slow" {
			return reconcile.Done(), nil
		}
		close(inFlight)
		time.Sleep(time.Second)
		err := ctx.Err()
		ctxErr.Store(&err)
		finished.Store(true)
		return reconcile.Done(), nil
	}), manager.For[*corev1.ConfigMap](nil))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, m)
	if err := m.UncachedClient().Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	<-inFlight
	if err := s.stop(t); err != nil {
		t.Errorf("Start = %v after a clean stop", err)
	}
	if !finished.Load() {
		t.Error("Start returned before the reconcile in flight finished")
	}
	if err := *ctxErr.Load(); err != nil {
		t.Errorf("the reconcile's context ended during the drain: %v", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    manager.Options
		mention []string
	}{
		{"negative timeout", manager.Options{ShutdownTimeout: -time.Second}, []string{"ShutdownTimeout is -1s"}},
		{"lease without name", manager.Options{LeaderElection: manager.LeaderElectionOptions{Enabled: true, Namespace: "x"}},
			[]string{"LeaderElection.Name is empty"}},
		{"lease durations out of order", manager.Options{LeaderElection: manager.LeaderElectionOptions{
			Enabled: true, Name: "l", Namespace: "x", LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}},
			[]string{"LeaseDuration (1s) must be longer than RenewDeadline (2s)"}},
		{"lease of fractional seconds", manager.Options{LeaderElection: manager.LeaderElectionOptions{
			Enabled: true, Name: "l", Namespace: "x", LeaseDuration: 2500 * time.Millisecond, RenewDeadline: 2200 * time.Millisecond, RetryPeriod: time.Second}},
			[]string{"LeaseDuration (2.5s, which the Lease stores as 2s) must be longer than RenewDeadline (2.2s)"}},
		{"lease namespace outside a pod", manager.Options{LeaderElection: manager.LeaderElectionOptions{Enabled: true, Name: "l"}},
			[]string{"LeaderElection.Namespace is empty"}},
		{"bad address", manager.Options{Metrics: manager.MetricsOptions{BindAddress: "8080"}}, []string{`Metrics.BindAddress "8080"`}},
		{"negative metrics auth limits", manager.Options{Metrics: manager.MetricsOptions{Auth: manager.MetricsAuthOptions{TTL: -time.Second, TokenReviewBurst: -1}}},
			[]string{"Metrics.Auth.TTL is -1s", "TokenReviewBurst (-1)"}},
		{"memory limit ratio over 1", manager.Options{MemoryLimit: manager.MemoryLimitOptions{Ratio: 1.5}},
			[]string{"MemoryLimit.Ratio is 1.5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := manager.New(env.Config(), tt.opts)
			if err == nil {
				t.Fatal("New succeeded")
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
	if _, err := manager.New(nil, manager.Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
}

func TestStartTwiceAndAddAfterStart(t *testing.T) {
	m := newManager(t, env.Namespace(t), manager.Options{})
	start(t, m)
	eventually(t, "start", func() bool { return m.MetricsAddr() != "" })
	if err := m.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "Start called twice") {
		t.Errorf("second Start = %v, want an error saying so", err)
	}
	if err := m.Add(manager.RunnableFunc(func(context.Context) error { return nil })); err == nil || !strings.Contains(err.Error(), "after Start") {
		t.Errorf("Add after Start = %v, want an error saying so", err)
	}
}

// A runnable's error stops the manager, which returns it.
func TestRunnableErrorStops(t *testing.T) {
	m := newManager(t, env.Namespace(t), manager.Options{})
	boom := errors.New("boom")
	var stopped sync.WaitGroup
	stopped.Add(1)
	if err := m.Add(leaderless(func(ctx context.Context) error { <-ctx.Done(); stopped.Done(); return nil })); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(manager.RunnableFunc(func(context.Context) error { return boom })); err != nil {
		t.Fatal(err)
	}
	err := m.Start(t.Context())
	if !errors.Is(err, boom) {
		t.Errorf("Start = %v, want the runnable's error", err)
	}
	stopped.Wait()
}

// leaderless is a runnable that needs no lease.
type leaderless func(ctx context.Context) error

func (f leaderless) Start(ctx context.Context) error { return f(ctx) }
func (leaderless) NeedLeaderElection() bool          { return false }

// A process whose watch is forbidden by RBAC is not ready, even though the
// list it may make synced the cache; the probe names the verb to grant.
func TestReadinessReflectsAForbiddenWatch(t *testing.T) {
	ns := env.Namespace(t)
	const user = "opkit-manager-list-only"
	rbac := env.Client().RbacV1()
	if _, err := rbac.Roles(ns).Create(t.Context(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "list-only", Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "list-only", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "list-only"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := env.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	m, err := manager.New(cfg, manager.Options{
		Cache:   cache.Options{Namespaces: []string{ns}},
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "127.0.0.1:0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Register[*corev1.ConfigMap](m.Cache(), cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	start(t, m)
	eventually(t, "readiness to name the forbidden watch", func() bool {
		code, body := get(t, "http://"+m.HealthProbeAddr()+"/readyz")
		return code == 500 && strings.Contains(body, "synced, but") && strings.Contains(body, `"watch"`)
	})
}
