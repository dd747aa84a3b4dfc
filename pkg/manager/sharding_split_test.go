package manager_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// createConfigMaps creates n ConfigMaps obj-000… in ns, with data want=1,
// a few at a time.
func createConfigMaps(t *testing.T, ns string, n int) {
	t.Helper()
	cms := env.Client().CoreV1().ConfigMaps(ns)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	const workers = 8
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("obj-%03d", i)}, Data: map[string]string{"want": "1"}}
				if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// split checks that each live manager's primary cache holds at most
// limit of the n objects, and that together they hold each object
// exactly once.
func split(t *testing.T, n, limit int, live ...*shardedManager) {
	t.Helper()
	var last string
	eventually(t, fmt.Sprintf("the caches of %d managers to split %d objects", len(live), n), func() bool {
		seen := map[string]int{}
		last = ""
		for _, sm := range live {
			l, err := cache.Internal(sm.m.Cache(), cacheaccess.Key{}).LookupKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"), cacheaccess.Typed)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := l.List("", labels.Everything())
			if err != nil {
				t.Fatal(err)
			}
			last += fmt.Sprintf(" %s:%d", sm.who, len(objs))
			if len(objs) > limit {
				return false
			}
			for _, o := range objs {
				seen[o.GetName()]++
			}
		}
		if len(seen) != n {
			return false
		}
		for _, c := range seen {
			if c != 1 {
				return false
			}
		}
		return true
	})
	t.Logf("objects cached per manager:%s (at most %d each)", last, limit)
}

// Three sharded managers over 3,000 ConfigMaps: each caches about a third
// of them, together all, each once; each object is reconciled by exactly
// one of them, never by two at once, and never admitted before its slot
// is cached (the converger checks that an object it cannot find does not
// exist). A fourth joins and the caches split four ways; one leaves
// gracefully and the other three take its share.
func TestShardedManagersSplitCaches(t *testing.T) {
	ns := env.Namespace(t)
	const n = 3000
	createConfigMaps(t, ns, n)
	log := newShardLog()
	var ms []*shardedManager
	for _, who := range []string{"s0", "s1", "s2"} {
		ms = append(ms, startShardedWith(t, ns, who, log, manager.DefaultSlots, cache.ServerFilterDetect))
	}
	settledOver(t, manager.DefaultSlots, ms...)
	split(t, n, n/len(ms)+n/10, ms...)
	converged(t, ns, log, n, "1", ms...)
	log.check(t)

	s3 := startShardedWith(t, ns, "s3", log, manager.DefaultSlots, cache.ServerFilterDetect)
	ms = append(ms, s3)
	settledOver(t, manager.DefaultSlots, ms...)
	split(t, n, n/len(ms)+n/10, ms...)

	if err := ms[0].s.stop(t); err != nil {
		t.Fatalf("stop s0: %v", err)
	}
	settledOver(t, manager.DefaultSlots, ms[1:]...)
	split(t, n, n/3+n/10, ms[1:]...)
	log.check(t)
}

// converged waits until every one of the n ConfigMaps is marked done at
// want, and checks that each change was applied by exactly one manager.
func converged(t *testing.T, ns string, log *shardLog, n int, want string, live ...*shardedManager) {
	t.Helper()
	cms := env.Client().CoreV1().ConfigMaps(ns)
	// Thousands of reconciles: on a loaded machine (two cores, -race) they
	// take longer than eventually's deadline while making progress, so the
	// wait fails only when no ConfigMap has converged for that long.
	stalled := 30 * time.Second
	best, since := -1, time.Now()
	for {
		list, err := cms.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, cm := range list.Items {
			if cm.Annotations["done"] == want {
				done++
			}
		}
		if done == n {
			break
		}
		if done > best {
			best, since = done, time.Now()
		} else if time.Since(since) > stalled {
			t.Fatalf("waiting for %d ConfigMaps to converge at %s: %d have, and none more in %v; %s", n, want, done, stalled, stuck(t, list.Items, want, live))
		}
		time.Sleep(100 * time.Millisecond)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for i := range n {
		change := fmt.Sprintf("obj-%03d@%s", i, want)
		if got := log.applied[change]; len(got) != 1 {
			t.Errorf("change %s applied by %v, want exactly one manager", change, got)
		}
	}
}

// With the API server's filtering off (ServerFilterOff: each informer
// receives every object and keeps its slots'), the caches still split and
// each change is applied exactly once.
func TestShardedManagersFilterInTheCache(t *testing.T) {
	ns := env.Namespace(t)
	const n = 100
	createConfigMaps(t, ns, n)
	log := newShardLog()
	var ms []*shardedManager
	for _, who := range []string{"f0", "f1"} {
		ms = append(ms, startShardedWith(t, ns, who, log, shardSlots, cache.ServerFilterOff))
	}
	settled(t, ms...)
	split(t, n, n-1, ms...) // few objects: an even split is not assured
	converged(t, ns, log, n, "1", ms...)
	log.check(t)
}

// In sharded mode NewController registers its For type and, with
// ShardWatch, a Watches type sharded by the keys given, and sets the
// reconciler's nil Lister to it: cache.Register with the same TypeOptions
// returns the same registration, not a second one.
// ShardWatch of anything but Watches is refused.
func TestShardWatchRegistersSharded(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{Sharding: manager.ShardingOptions{Enabled: true, Group: "reg", Namespace: ns}})
	r := reconcile.Func[reconcile.Request](func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Done(), nil })
	toCM := func(s *corev1.Secret) []reconcile.Request { return nil }
	var bound *cache.Lister[*corev1.ConfigMap]
	if _, err := manager.NewController(m, "reg", r, manager.For(&bound), manager.ShardBy(sharding.ByNamespace),
		manager.ShardWatch(sharding.ByNamespace, manager.Watches(nil, toCM))); err != nil {
		t.Fatal(err)
	}
	if bound == nil {
		t.Error("For left the reconciler's Lister nil")
	}
	if _, err := cache.Register[*corev1.ConfigMap](m.Cache(), cache.TypeOptions{Sharded: true, ShardKey: sharding.ByNamespace}); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Register[*corev1.Secret](m.Cache(), cache.TypeOptions{Sharded: true, ShardKey: sharding.ByNamespace}); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, st := range m.Cache().Status() {
		kinds[st.GVK.Kind]++
	}
	if kinds["ConfigMap"] != 1 || kinds["Secret"] != 1 {
		t.Errorf("registrations per kind %v, want one ConfigMap and one Secret: the manager's and cache.Register's must be the same", kinds)
	}
	_, err := manager.NewController(m, "bad", r, manager.ShardWatch(sharding.ByNamespace, manager.For[*corev1.Secret](nil)))
	if err == nil || !strings.Contains(err.Error(), "only a watch made by Watches can be sharded") {
		t.Errorf("ShardWatch of For: %v, want it refused", err)
	}
}

// A reconciler that reads its primary objects through its own Lister
// registered with ShardedTypeOptions shares the controller's split
// registration; without sharding the options are the zero TypeOptions.
func TestShardedTypeOptionsShareTheControllersRegistration(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{Sharding: manager.ShardingOptions{Enabled: true, Group: "typeopts", Namespace: ns}})
	r := reconcile.Func[reconcile.Request](func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Done(), nil })
	if _, err := cache.Register[*corev1.ConfigMap](m.Cache(), m.ShardedTypeOptions(sharding.ByUID)); err != nil {
		t.Fatal(err)
	}
	if _, err := manager.NewController(m, "typeopts", r, manager.For[*corev1.ConfigMap](nil)); err != nil {
		t.Fatal(err)
	}
	var regs []cache.TypeStatus
	for _, st := range m.Cache().Status() {
		if st.GVK.Kind == "ConfigMap" {
			regs = append(regs, st)
		}
	}
	if len(regs) != 1 {
		t.Errorf("%d ConfigMap registrations, want 1: the reconciler's Lister and the controller's must be one, split", len(regs))
	}
	plain := newManager(t, ns, manager.Options{})
	if got := plain.ShardedTypeOptions(sharding.ByUID); got.Sharded {
		t.Errorf("ShardedTypeOptions without sharding = %+v, want the zero TypeOptions", got)
	}
}

// stuck describes, for a failure, up to five ConfigMaps not done at want,
// which of the live managers caches each, and each manager's view of its
// shard group.
func stuck(t *testing.T, cms []corev1.ConfigMap, want string, live []*shardedManager) string {
	var b strings.Builder
	for _, sm := range live {
		reg := sm.m.Registry()
		fmt.Fprintf(&b, "%s: %v members, %v slots held; ", sm.who, gauge(t, reg, imetrics.ShardingMembers), gauge(t, reg, imetrics.ShardingSlotsHeld))
	}
	n := 0
	for _, cm := range cms {
		if cm.Annotations["done"] == want || n == 5 {
			continue
		}
		n++
		var in []string
		for _, sm := range live {
			if l, err := cache.Internal(sm.m.Cache(), cacheaccess.Key{}).LookupKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"), cacheaccess.Typed); err == nil {
				if _, err := l.Get(cm.Namespace, cm.Name); err == nil {
					in = append(in, sm.who)
				}
			}
		}
		fmt.Fprintf(&b, "%s (done %q) cached by %v; ", cm.Name, cm.Annotations["done"], in)
	}
	return b.String()
}
