package manager_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// autoscaleDeadline bounds each wait of the autoscaling test: cool-downs
// and joins on a busy machine.
const autoscaleDeadline = 4 * time.Minute

// sleeper is a replica's reconciler: it records each reconcile in log and
// sleeps for *slow, the load.
type sleeper struct {
	who  string
	log  *shardLog
	slow *atomic.Int64
}

func (s *sleeper) Reconcile(ctx context.Context, key reconcile.Request) (reconcile.Result, error) {
	defer s.log.end(s.log.begin(s.who, key))
	select {
	case <-time.After(time.Duration(s.slow.Load())):
	case <-ctx.Done():
	}
	return reconcile.Done(), nil
}

// fleet runs as many in-process replicas as the Deployment's spec.replicas
// asks for, as a Deployment's pods would be: a replica scaled away is
// stopped gracefully (its leave is the SIGTERM's), the newest first.
type fleet struct {
	t      *testing.T
	ns     string
	log    *shardLog
	slow   *atomic.Int64
	opts   manager.AutoscaleOptions
	mu     sync.Mutex
	live   []*shardedManager
	next   int
	scales []int // spec.replicas as the fleet saw it change
}

func (f *fleet) start() *shardedManager {
	who := fmt.Sprintf("r%d", f.next)
	f.next++
	m := newManager(f.t, f.ns, manager.Options{
		Sharding: manager.ShardingOptions{
			Enabled: true, Group: "auto", Namespace: f.ns, Identity: who, Slots: shardSlots,
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
			Autoscale: f.opts,
		},
		Cache: cache.Options{Namespaces: []string{f.ns}},
	})
	var l *cache.Lister[*corev1.ConfigMap]
	if _, err := manager.NewController(m, "sleep", &sleeper{who: who, log: f.log, slow: f.slow}, manager.For(&l),
		manager.WithOptions(controller.Options[reconcile.Request]{MaxConcurrentReconciles: 2})); err != nil {
		f.t.Fatal(err)
	}
	return &shardedManager{who: who, m: m, s: start(f.t, m)}
}

// follow matches the replicas to the Deployment's spec.replicas until ctx
// ends.
func (f *fleet) follow(ctx context.Context, name string) {
	deploys := env.Client().AppsV1().Deployments(f.ns)
	for ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		sc, err := deploys.GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		f.match(int(sc.Spec.Replicas))
	}
}

// match starts and stops replicas until want run.
func (f *fleet) match(want int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.scales) == 0 || f.scales[len(f.scales)-1] != want {
		f.scales = append(f.scales, want)
	}
	for len(f.live) < want {
		f.live = append(f.live, f.start())
	}
	for len(f.live) > want {
		last := f.live[len(f.live)-1]
		f.live = f.live[:len(f.live)-1]
		if err := last.s.stop(f.t); err != nil {
			f.t.Errorf("stopping %s: %v", last.who, err)
		}
	}
}

func (f *fleet) replicas() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.scales...)
}

func (f *fleet) members() []*shardedManager {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*shardedManager(nil), f.live...)
}

func newDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "operator"}}},
			},
		},
	}
}

// With the queue wait objective breached by slow reconciles under a
// steady churn, the autoscaler scales the operator's Deployment up through
// its scale subresource; once the load is gone and the replicas calm for
// the (short) down cool-down, it scales back down one step at a time to
// MinReplicas. No key is ever reconciled by two replicas at once.
func TestAutoscaleFollowsTheLoad(t *testing.T) {
	ns := env.Namespace(t)
	ctx := t.Context()
	if _, err := env.Client().AppsV1().Deployments(ns).Create(ctx, newDeployment("op", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var slow atomic.Int64
	slow.Store(int64(200 * time.Millisecond))
	f := &fleet{t: t, ns: ns, log: newShardLog(), slow: &slow, opts: manager.AutoscaleOptions{
		Enabled: true, Name: "op", QueueLatency: 300 * time.Millisecond, MaxReplicas: 4, MaxStep: 2,
		UpCooldown: 3 * time.Second, DownCooldown: 5 * time.Second, Interval: time.Second,
	}}
	followCtx, stopFollowing := context.WithCancel(ctx)
	var following sync.WaitGroup
	following.Go(func() { f.follow(followCtx, "op") })
	defer func() { stopFollowing(); following.Wait() }()

	// 40 ConfigMaps changed every 500 ms: 80 reconciles a second wanted,
	// of 200 ms each, where one replica's 2 workers do 10.
	churnCtx, stopChurn := context.WithCancel(ctx)
	var churning sync.WaitGroup
	churning.Go(func() { churn(churnCtx, t, ns, 40) })
	waitLong(t, "a scale-up", func() bool { return maxOf(f.replicas()) > 1 })
	stopChurn()
	churning.Wait()
	slow.Store(0)
	up := maxOf(f.replicas())
	waitLong(t, "a scale-down to MinReplicas", func() bool {
		r := f.replicas()
		ms := f.members()
		return r[len(r)-1] == 1 && len(ms) == 1 && gauge(t, ms[0].m.Registry(), imetrics.ShardingRecommendedReplicas) == 1
	})
	t.Logf("spec.replicas went %v", f.replicas())
	r := f.replicas()
	for i := slices.Index(r, up) + 1; i < len(r); i++ {
		if r[i] != r[i-1]-1 {
			t.Errorf("after the peak of %d, spec.replicas went %v: want one step down at a time", up, r)
			break
		}
	}
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	if len(f.log.overlaps) > 0 {
		t.Errorf("keys reconciled by two replicas at once: %v", f.log.overlaps)
	}
}

// churn changes n ConfigMaps of ns every 500 ms until ctx ends.
func churn(ctx context.Context, t *testing.T, ns string, n int) {
	cms := env.Client().CoreV1().ConfigMaps(ns)
	for round := 0; ctx.Err() == nil; round++ {
		for i := range n {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%02d", i)}, Data: map[string]string{"round": fmt.Sprint(round)}}
			var err error
			if round == 0 {
				_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			} else {
				_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			}
			if err != nil && ctx.Err() == nil {
				t.Errorf("churn: %v", err)
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(autoscaleDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
