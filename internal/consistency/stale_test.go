package consistency_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/owner"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// childMaker is the classic stale-cache bug: it creates a child, named by
// generateName, whenever it lists none from the cache. A reconcile that
// runs before the cache holds the child it just created creates a second.
type childMaker struct {
	mgr      *manager.Manager
	parents  *cache.Lister[*corev1.ConfigMap]
	children *cache.Lister[*corev1.Secret]
	inflight atomic.Int64
}

func (r *childMaker) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.inflight.Add(1)
	defer r.inflight.Add(-1)
	parent, err := r.parents.Get(req.Namespace, req.Name)
	if err != nil {
		return reconcile.Done(), crclient.IgnoreNotFound(err)
	}
	children, err := r.children.ControlledBy(parent)
	if err != nil || len(children) > 0 {
		return reconcile.Done(), err
	}
	ref, err := owner.ControllerRef(r.mgr.Scheme(), parent)
	if err != nil {
		return reconcile.Done(), err
	}
	child := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: parent.Namespace, GenerateName: parent.Name + "-",
		Labels:          map[string]string{"group": parent.Labels["group"]},
		OwnerReferences: []metav1.OwnerReference{ref},
	}}
	return reconcile.Done(), r.mgr.UncachedClient().Create(ctx, child)
}

// With read-your-writes on, a reconciler that creates a child when it
// lists none never creates two, however its key is hammered; with it off,
// the same reconciler in the same run does.
func TestStaleCacheCreatesNoDuplicateChild(t *testing.T) {
	const bursts, adds = 200, 20
	ns := env.Namespace(t)
	mgr := newManager(t, ns)
	r := &childMaker{mgr: mgr}
	var err error
	if r.parents, err = cache.Register[*corev1.ConfigMap](mgr.Cache(), cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	if r.children, err = cache.Register[*corev1.Secret](mgr.Cache(), cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrls := map[string]*controller.Controller[reconcile.Request]{}
	for group, timeout := range map[string]time.Duration{"on": 0, "off": -1} {
		inGroup := source.LabelSelector[*corev1.ConfigMap](labels.SelectorFromSet(labels.Set{"group": group}))
		ctrls[group], err = manager.NewController(mgr, "children-"+group, r,
			manager.For[*corev1.ConfigMap](nil, inGroup),
			manager.Owns[*corev1.Secret](nil),
			manager.WithOptions(controller.Options[reconcile.Request]{MaxConcurrentReconciles: 4, ReadYourWritesTimeout: timeout}))
		if err != nil {
			t.Fatal(err)
		}
	}
	start(t, mgr)

	// Each burst: create a parent, then add its key again and again while
	// its first reconciles run, as a storm of events would.
	var wg sync.WaitGroup
	for group, c := range ctrls {
		wg.Go(func() {
			for i := range bursts {
				p := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: fmt.Sprintf("%s-%03d", group, i), Labels: map[string]string{"group": group},
				}}
				if err := mgr.UncachedClient().Create(t.Context(), p); err != nil {
					t.Error(err)
					return
				}
				key := reconcile.Request{Namespace: p.Namespace, Name: p.Name}
				for range adds {
					c.Queue().Add(key)
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()
	for group, c := range ctrls {
		waitIdle(t, c, r)
		dup := duplicates(t, mgr, ns, group)
		t.Logf("read-your-writes %s: %d of %d parents have more than one child", group, len(dup), bursts)
		switch {
		case group == "on" && len(dup) > 0:
			t.Errorf("read-your-writes on: %d parents with duplicate children, such as %v", len(dup), dup[:min(len(dup), 5)])
		case group == "off" && len(dup) == 0:
			t.Errorf("read-your-writes off: no duplicate child in %d bursts: the test cannot tell the feature works", bursts)
		}
	}
	if n := waits(t, mgr.Registry(), "children-on", imetrics.WaitCaughtUp); n == 0 {
		t.Errorf("read-your-writes on: no wait observed in %s", imetrics.ReadYourWritesWait)
	}
}

// duplicates returns the parents of group with more than one child, read
// from the API server.
func duplicates(t *testing.T, mgr *manager.Manager, ns, group string) []string {
	t.Helper()
	var list corev1.SecretList
	if err := mgr.UncachedClient().List(t.Context(), &list, crclient.InNamespace(ns), crclient.MatchingLabels{"group": group}); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, s := range list.Items {
		count[s.OwnerReferences[0].Name]++
	}
	var dup []string
	for p, n := range count {
		if n > 1 {
			dup = append(dup, fmt.Sprintf("%s (%d)", p, n))
		}
	}
	return dup
}

// waitIdle waits until c's queue is empty and r reconciles nothing, twice in a row a little apart, so that the events of the
// last children created have been handled too.
func waitIdle(t *testing.T, c *controller.Controller[reconcile.Request], r *childMaker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	idle := 0
	for idle < 2 {
		select {
		case <-ctx.Done():
			t.Fatalf("controller %s did not become idle: %d keys queued", c.Name(), c.Queue().Len())
		case <-time.After(100 * time.Millisecond):
		}
		if c.Queue().Len() == 0 && r.inflight.Load() == 0 {
			idle++
		} else {
			idle = 0
		}
	}
}

func newManager(t *testing.T, ns string) *manager.Manager {
	t.Helper()
	mgr, err := manager.New(env.Config(), manager.Options{
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "0"},
		Cache: cache.Options{
			Namespaces: []string{ns},
			Mutations:  cache.MutationOptions{OnMutation: testenv.ReportMutations(t)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

func start(t *testing.T, mgr *manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager Start: %v", err)
		}
	})
	syncCtx, cancelSync := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelSync()
	if err := mgr.Cache().WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}
}
