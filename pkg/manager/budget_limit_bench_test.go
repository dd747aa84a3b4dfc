package manager_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	crbuilder "sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	crmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// The server-limit workload: two controllers of limitWorkers workers each
// patch limitObjects ConfigMaps without pause, leader election on with
// short timings, for limitWindow after limitWarmup, as a user whose
// requests a priority level of one concurrency share serves, rejecting the
// rest with 429.
const (
	limitWorkers = 15
	limitObjects = 30
	limitWarmup  = 3 * time.Second
	limitWindow  = 20 * time.Second
)

var (
	limitLease = 6 * time.Second
	limitRenew = 4 * time.Second
	limitRetry = time.Second
)

// limitRun is what one peer did under the server's limit.
type limitRun struct {
	writes     int64 // patches that succeeded in the window
	rejected   float64
	dispatched float64
	lostLeases int
}

// patcher is the workload's reconcile, the same for every peer: one merge
// patch, then again at once.
type patcher struct {
	c      client.Client
	counts *atomic.Bool // count writes (the window is open)
	writes *atomic.Int64
}

func (p *patcher) patch(ctx context.Context, ns, name string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"opkit.dev/at":"%d"}}}`, time.Now().UnixNano())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := p.c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return err
	}
	if p.counts.Load() {
		p.writes.Add(1)
	}
	return nil
}

func (p *patcher) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return reconcile.RequeueAfter(time.Millisecond), p.patch(ctx, req.Namespace, req.Name)
}

// flowControl returns the API server's count of user's requests its
// priority level rejected, and of those it dispatched (the priority level
// is named after user: see limitUser).
func flowControl(b *testing.B, user string) (rejected, dispatched float64) {
	b.Helper()
	raw, err := env.Client().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	sum := func(name string) float64 {
		total := 0.0
		for _, m := range mfs[name].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "priority_level" && l.GetValue() == user {
					total += m.GetCounter().GetValue()
				}
			}
		}
		return total
	}
	return sum("apiserver_flowcontrol_rejected_requests_total"), sum("apiserver_flowcontrol_dispatched_requests_total")
}

// concentrate gives the API server's other priority levels so many more
// concurrency shares that the one limitUser makes (1 share) gets a single
// seat: the limit then binds this workload on a two-core machine, as a
// busy production server's would. It is removed at the end.
func concentrate(b *testing.B) {
	b.Helper()
	plc := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "opkit-bench-concentrate"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](1000), LendablePercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
	plcs := env.Client().FlowcontrolV1().PriorityLevelConfigurations()
	if _, err := plcs.Create(b.Context(), plc, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = plcs.Delete(context.Background(), plc.Name, metav1.DeleteOptions{}) })
}

// limitedConfig returns the admin config, impersonating user, its
// client-side limit set to qps (-1: none) and burst.
func limitedConfig(user string, qps float32, burst int) *rest.Config {
	cfg := env.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cfg.QPS, cfg.Burst = qps, burst
	return cfg
}

// limitedRun starts the workload for one peer, counting into p, and
// returns a channel that yields Start's error once it returns, a stop,
// and, when the peer stays up after losing its lease, whether it leads.
type limitedRun func(user, ns string, p *patcher) (done <-chan error, stop func(), leading func() bool)

// runLimited runs the workload for one peer with run.
func runLimited(b *testing.B, peer string, run limitedRun) limitRun {
	b.Helper()
	user := fmt.Sprintf("opkit-bench-limit-%s-%d", peer, time.Now().UnixNano())
	ns := env.Namespace(b)
	configMaps(b, env.Client(), ns, limitObjects)
	limitUser(b, env.Client(), user)
	var counts atomic.Bool
	var writes atomic.Int64
	p := &patcher{counts: &counts, writes: &writes}
	rej0, disp0 := flowControl(b, user)
	done, stop, leading := run(user, ns, p)
	var r limitRun
	// A lease is lost when Start returns (controller-runtime's manager
	// exits), or when the leader's leader_election_master_status falls to
	// 0 (opkit's stays up, fenced, and campaigns again), sampled every
	// 50ms.
	led := false
	lost := func(wait time.Duration) {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		end := time.After(wait)
		for done != nil {
			select {
			case err := <-done:
				r.lostLeases++
				b.Logf("%s: Start returned %v: the lease lost", peer, err)
				done = nil
			case <-tick.C:
				if leading == nil {
					continue
				}
				if now := leading(); led && !now {
					r.lostLeases++
					b.Logf("%s: leader_election_master_status fell to 0: the lease lost", peer)
					led = false
				} else {
					led = now
				}
			case <-end:
				return
			}
		}
	}
	lost(limitWarmup)
	counts.Store(true)
	lost(limitWindow)
	counts.Store(false)
	stop()
	r.writes = writes.Load()
	rej1, disp1 := flowControl(b, user)
	r.rejected, r.dispatched = rej1-rej0, disp1-disp0
	b.Logf("%s: %d writes in %v (%.1f a second), %.0f requests rejected with 429 and %.0f dispatched by the server, %d leases lost",
		peer, r.writes, limitWindow, float64(r.writes)/limitWindow.Seconds(), r.rejected, r.dispatched, r.lostLeases)
	return r
}

// runOpkit runs the workload on an opkit manager with its defaults (the
// API budget with no rate fixed).
func runOpkit(b *testing.B) limitedRun {
	return func(user, ns string, p *patcher) (<-chan error, func(), func() bool) {
		m, err := manager.New(limitedConfig(user, -1, 0), manager.Options{
			Cache:   cache.Options{Namespaces: []string{ns}},
			Metrics: manager.MetricsOptions{BindAddress: "127.0.0.1:0"}, Health: manager.HealthOptions{BindAddress: "127.0.0.1:0"},
			LeaderElection: manager.LeaderElectionOptions{Enabled: true, Name: "limit", Namespace: ns, Identity: "opkit",
				LeaseDuration: limitLease, RenewDeadline: limitRenew, RetryPeriod: limitRetry},
			ShutdownTimeout: time.Second,
		})
		if err != nil {
			b.Fatal(err)
		}
		p.c = m.UncachedClient()
		for _, name := range []string{"writer-a", "writer-b"} {
			if _, err := manager.NewController(m, name, p, manager.For[*corev1.ConfigMap](nil),
				manager.WithOptions(controller.Options[reconcile.Request]{MaxConcurrentReconciles: limitWorkers})); err != nil {
				b.Fatal(err)
			}
		}
		done, stop := startManager(func(ctx context.Context) error { return m.Start(ctx) })
		leading := func() bool { return gauge(b, m.Registry(), "leader_election_master_status", "name", "limit") == 1 }
		return done, stop, leading
	}
}

// runControllerRuntime runs the workload on a controller-runtime manager
// whose config has qps and burst: -1, controller-runtime's default (no
// client-side limit), or a client-go token bucket.
func runControllerRuntime(b *testing.B, qps float32, burst int) limitedRun {
	return func(user, ns string, p *patcher) (<-chan error, func(), func() bool) {
		crlog.SetLogger(logr.Discard())
		m, err := crmanager.New(limitedConfig(user, qps, burst), crmanager.Options{
			Cache:   crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}},
			Metrics: crmetrics.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
			LeaderElection: true, LeaderElectionID: "limit", LeaderElectionNamespace: ns,
			LeaseDuration: &limitLease, RenewDeadline: &limitRenew, RetryPeriod: &limitRetry,
			LeaderElectionReleaseOnCancel: true,
		})
		if err != nil {
			b.Fatal(err)
		}
		p.c = m.GetClient()
		r := crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
			return crreconcile.Result{RequeueAfter: time.Millisecond}, p.patch(ctx, req.Namespace, req.Name)
		})
		for _, name := range []string{"writer-a", "writer-b"} {
			err := crbuilder.ControllerManagedBy(m).Named(name).For(&corev1.ConfigMap{}).
				WithOptions(crcontroller.Options{MaxConcurrentReconciles: limitWorkers, SkipNameValidation: ptr.To(true)}).Complete(r)
			if err != nil {
				b.Fatal(err)
			}
		}
		done, stop := startManager(m.Start)
		return done, stop, nil // it exits when it loses its lease
	}
}

// startManager runs start in the background; the returned stop cancels
// it and waits for it to return.
func startManager(start func(context.Context) error) (<-chan error, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done, ended := make(chan error, 1), make(chan struct{})
	go func() {
		err := start(ctx)
		if ctx.Err() == nil {
			done <- err // returned on its own: the lease lost
		}
		close(ended)
	}()
	return done, func() {
		cancel()
		select {
		case <-ended:
		case <-time.After(time.Minute):
		}
	}
}

// BenchmarkBudgetServerLimit puts the same workload, as one user whose
// requests the API server's priority and fairness limits to a concurrency
// of a few (rejecting the rest with 429), on opkit with its defaults, on
// controller-runtime with its default (QPS -1, no client-side limit), and
// on controller-runtime with a client-go token bucket (20 a second, burst
// 30: controller-runtime's own default before it dropped client-side
// limits). It reports each peer's writes a second, the 429s the server
// sent it, and the leases it lost, and opkit's ratios to each.
func BenchmarkBudgetServerLimit(b *testing.B) {
	concentrate(b)
	for range b.N {
		ok := runLimited(b, "opkit", runOpkit(b))
		cr := runLimited(b, "controller-runtime", runControllerRuntime(b, -1, 0))
		tb := runLimited(b, "token-bucket", runControllerRuntime(b, 20, 30))
		report := func(name string, r limitRun) {
			b.ReportMetric(float64(r.writes)/limitWindow.Seconds(), name+"-writes/s")
			b.ReportMetric(r.rejected, name+"-429s")
			b.ReportMetric(float64(r.lostLeases), name+"-lost-leases")
		}
		report("opkit", ok)
		report("cr", cr)
		report("tb", tb)
		b.ReportMetric(float64(ok.writes)/float64(max(cr.writes, 1)), "opkit/cr-writes")
		b.ReportMetric(float64(ok.writes)/float64(max(tb.writes, 1)), "opkit/tb-writes")
		b.ReportMetric(cr.rejected/max(ok.rejected, 1), "cr/opkit-429s")
		b.ReportMetric(tb.rejected/max(ok.rejected, 1), "tb/opkit-429s")
	}
}
