package fleet_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

const (
	outageMembers = 4  // each on an API server of its own; the last is stopped
	outageRate    = 10 // updates a second, each member
	outageKeys    = 20
	outagePhase   = 10 * time.Second // before the stop, and after it
)

// BenchmarkMemberOutage runs four members, each on a control plane of its
// own, writing ten updates a second each through a controller whose
// reconciler reads the object from the member's Lister and asks the
// member's API server for it; then stops the last member's API server
// and, after as long again, starts it. It reports the other members' p99
// latency from an update's write to the start of its reconcile before
// the stop and while the server is down, and their ratio; the time from
// the stop to opkit_fleet_member_reachable turning 0 (with the default
// probe interval, 10s); and, once the server is started again, the time
// to the metric's 1 and to the reconcile of a write made then.
func BenchmarkMemberOutage(b *testing.B) {
	for range b.N {
		envs := startEnvs(b, outageMembers)
		o := newOutage(b, envs)
		o.run(b)
	}
}

// outage is one run of BenchmarkMemberOutage.
type outage struct {
	envs       []*testenv.Environment
	namespaces []string
	reg        *prometheus.Registry
	f          *fleet.Fleet

	mu      sync.Mutex
	written []time.Time     // of the other members' reconciled writes
	waited  []time.Duration // from each of those writes to its reconcile
	backAt  time.Time       // a write to the stopped member once back
	back    chan struct{}   // closed when that write is reconciled
}

func newOutage(b *testing.B, envs []*testenv.Environment) *outage {
	o := &outage{envs: envs, reg: prometheus.NewRegistry(), back: make(chan struct{})}
	o.f = newFleet(b, fleet.Options{Registerer: o.reg})
	for _, e := range envs {
		ns := e.Namespace(b)
		for k := range outageKeys {
			if _, err := e.Client().CoreV1().ConfigMaps(ns).Create(b.Context(), &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(k)},
			}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		o.namespaces = append(o.namespaces, ns)
	}
	return o
}

func (o *outage) reconciler(cms *fleet.Lister[*corev1.ConfigMap]) reconcile.Reconciler[fleet.Request] {
	down := memberName(outageMembers - 1)
	return reconcile.Func[fleet.Request](func(ctx context.Context, req fleet.Request) (reconcile.Result, error) {
		start := time.Now()
		l, err := cms.In(req.Cluster)
		if err != nil {
			return reconcile.Done(), err
		}
		cm, err := l.Get(req.Namespace, req.Name)
		if err != nil {
			return reconcile.Done(), nil
		}
		at, err := strconv.ParseInt(cm.Annotations[floodAt], 10, 64)
		if err == nil {
			o.record(req.Cluster == down, time.Unix(0, at), start)
		}
		// A reconcile asks its member's API server, as most do.
		return reconcile.Done(), fleet.ClusterFrom(ctx).Client().Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	})
}

func (o *outage) record(down bool, written, start time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !down {
		o.written = append(o.written, written)
		o.waited = append(o.waited, start.Sub(written))
		return
	}
	if !o.backAt.IsZero() && !written.Before(o.backAt) {
		select {
		case <-o.back:
		default:
			close(o.back)
		}
	}
}

func memberName(i int) string { return "member-" + strconv.Itoa(i) }

func (o *outage) run(b *testing.B) {
	cms, err := fleet.Register[*corev1.ConfigMap](o.f, cache.TypeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ctl, err := controller.New[fleet.Request]("outage", fleet.Reconciler(o.f, o.reconciler(cms)), controller.Options[fleet.Request]{
		Tenant: fleet.Request.Tenant, MaxConcurrentReconciles: 2,
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := ctl.Watch(fleet.Watch(cms, fleet.EnqueueObject[*corev1.ConfigMap]())); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { _ = o.f.Start(ctx) })
	wg.Go(func() { _ = ctl.Start(ctx) })
	for i, e := range o.envs {
		if err := o.f.Engage(ctx, fleet.Member{Name: memberName(i), Config: e.Config(), Namespace: o.namespaces[i]}); err != nil {
			b.Fatal(err)
		}
		if err := mustCluster(b, o.f, memberName(i)).Cache().WaitForSync(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for i, e := range o.envs {
		wg.Go(func() { driveTolerant(ctx, e.Client(), o.namespaces[i]) })
	}
	time.Sleep(outagePhase)
	down := o.envs[outageMembers-1]
	stopAt := time.Now()
	if err := down.StopAPIServer(); err != nil {
		b.Fatal(err)
	}
	detect := o.waitReachable(b, ctx, 0).Sub(stopAt)
	time.Sleep(time.Until(stopAt.Add(outagePhase)))
	startAt := time.Now()
	if err := down.StartAPIServer(); err != nil {
		b.Fatal(err)
	}
	started := time.Now()
	rejoin := o.waitReachable(b, ctx, 1).Sub(started)
	o.mu.Lock()
	o.backAt = time.Now()
	o.mu.Unlock()
	select {
	case <-o.back:
	case <-time.After(5 * time.Minute):
		b.Fatal("no write to the member back reconciled")
	}
	reconciled := time.Since(started)
	before, during := o.p99(time.Time{}, stopAt), o.p99(stopAt, startAt)
	b.ReportMetric(ms(before), "others-p99-before-ms")
	b.ReportMetric(ms(during), "others-p99-down-ms")
	b.ReportMetric(float64(during)/float64(before), "down/before")
	b.ReportMetric(detect.Seconds(), "stop-to-metric-0-s")
	b.ReportMetric(rejoin.Seconds(), "start-to-metric-1-s")
	b.ReportMetric(reconciled.Seconds(), "start-to-reconcile-s")
	b.ReportMetric(started.Sub(startAt).Seconds(), "api-server-start-s")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// p99 returns the other members' p99 latency of the writes made from
// from until to.
func (o *outage) p99(from, to time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var l []time.Duration
	for i, w := range o.written {
		if !w.Before(from) && w.Before(to) {
			l = append(l, o.waited[i])
		}
	}
	if len(l) == 0 {
		return 0
	}
	slices.Sort(l)
	return l[len(l)*99/100]
}

// waitReachable waits until the stopped member's metric is v, and returns
// when it saw it.
func (o *outage) waitReachable(b *testing.B, ctx context.Context, v float64) time.Time {
	for {
		if reachableMetric(b, o.reg, memberName(outageMembers-1)) == v {
			return time.Now()
		}
		select {
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func reachableMetric(b *testing.B, reg *prometheus.Registry, cluster string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != fleet.MetricMemberReachable {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" && l.GetValue() == cluster {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// driveTolerant updates the member's objects round-robin, outageRate a
// second, each with its write time, until ctx ends; a write that fails
// (its API server is down) is skipped.
func driveTolerant(ctx context.Context, cs kubernetes.Interface, ns string) {
	t := time.NewTicker(time.Second / outageRate)
	defer t.Stop()
	cms := cs.CoreV1().ConfigMaps(ns)
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i%outageKeys),
			Annotations: map[string]string{floodAt: strconv.FormatInt(time.Now().UnixNano(), 10)}}}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, _ = cms.Update(wctx, cm, metav1.UpdateOptions{})
		cancel()
	}
}
