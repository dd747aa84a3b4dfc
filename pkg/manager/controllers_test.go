package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// keys records the keys reconciled.
type keys struct {
	mu   sync.Mutex
	seen map[string]int
}

func (k *keys) reconciled(req reconcile.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen == nil {
		k.seen = map[string]int{}
	}
	k.seen[req.Name]++
}

func (k *keys) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.seen)
}

// seriesLabelled returns the series of reg that carry value as their
// controller or name label.
func seriesLabelled(t *testing.T, m *manager.Manager, value string) []string {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if (l.GetName() == "controller" || l.GetName() == "name") && l.GetValue() == value {
					out = append(out, mf.GetName()+s.String())
				}
			}
		}
	}
	return out
}

// A controller added to a running manager starts at once, and removed,
// leaves no goroutine, metric series or cache hold behind; its name can be
// used again, a hundred times over.
func TestControllerAddedAndRemovedAHundredTimes(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{})
	createConfigMaps(t, ns, 3)
	start(t, m)
	probes := "http://" + m.HealthProbeAddr()
	eventually(t, "readiness", func() bool { code, _ := get(t, probes+"/readyz"); return code == 200 })

	cycle := func(i int, check func()) {
		t.Helper()
		var k keys
		r := reconcile.Func[reconcile.Request](func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
			k.reconciled(req)
			return reconcile.Done(), nil
		})
		if _, err := manager.NewController(m, "churn", r, manager.For[*corev1.ConfigMap](nil)); err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		eventually(t, "the added controller to reconcile every ConfigMap", func() bool { return k.count() == 3 })
		if check != nil {
			check()
		}
		how := manager.Drop
		if i%2 == 1 {
			how = manager.Drain
		}
		if err := m.RemoveController(t.Context(), "churn", how); err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
	}
	// The first cycle makes what stays: the shared metric collectors, the
	// HTTP connections, the REST mapper's discovery.
	cycle(0, func() {
		if _, err := manager.NewController(m, "churn", reconcile.Func[reconcile.Request](nil), manager.For[*corev1.ConfigMap](nil)); err == nil || !strings.Contains(err.Error(), "exists") {
			t.Errorf("NewController of a name in use = %v, want an error saying it exists", err)
		}
		code, body := get(t, "http://"+m.MetricsAddr()+"/debug/holds")
		var holds []struct {
			Owner string                  `json:"owner"`
			GVK   schema.GroupVersionKind `json:"gvk"`
		}
		if err := json.Unmarshal([]byte(body), &holds); code != 200 || err != nil || len(holds) != 1 || holds[0].Owner != "churn" || holds[0].GVK.Kind != "ConfigMap" {
			t.Errorf("/debug/holds = %d %s (%v), want churn holding ConfigMaps", code, body, err)
		}
	})
	ignore := goleak.IgnoreCurrent()
	before, heapBefore := runtime.NumGoroutine(), heapInUse()
	for i := 1; i <= 100; i++ {
		cycle(i, nil)
	}
	deadline := time.Now().Add(30 * time.Second)
	for err := goleak.Find(ignore, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop")); err != nil; err = goleak.Find(ignore, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop")) {
		if time.Now().After(deadline) {
			t.Errorf("goroutines left behind by 100 controllers added and removed: %v", err)
			break
		}
	}
	t.Logf("goroutines: %d after the first cycle, %d after 100 more; heap in use: %.1f MiB, then %.1f MiB",
		before, runtime.NumGoroutine(), float64(heapBefore)/(1<<20), float64(heapInUse())/(1<<20))
	if s := seriesLabelled(t, m, "churn"); len(s) != 0 {
		t.Errorf("%d series of the removed controller left, such as %s", len(s), s[0])
	}
	if st := m.Cache().Status(); len(st) != 0 {
		t.Errorf("cache Status after the last removal = %+v, want no type: the controller held the only one", st)
	}
	if err := m.RemoveController(t.Context(), "churn", manager.Drop); err == nil || !strings.Contains(err.Error(), "no such controller") {
		t.Errorf("RemoveController of a removed controller = %v, want an error saying there is none", err)
	}
}

// signalDone is a context that calls first and then closes asked the
// first time Done is called: RemoveController asks it as it starts to
// wait, for the queue to drain or for the controller to stop.
type signalDone struct {
	context.Context
	first func()
	once  sync.Once
	asked chan struct{}
}

func (s *signalDone) Done() <-chan struct{} {
	s.once.Do(func() {
		s.first()
		close(s.asked)
	})
	return s.Context.Done()
}

// Drain reconciles the keys queued when RemoveController is called; Drop
// drops them and lets the reconcile in flight finish.
func TestRemoveControllerDrainsOrDrops(t *testing.T) {
	for _, tc := range []struct {
		how  manager.Removal
		name string
		want int
	}{
		{manager.Drain, "drain", 5},
		{manager.Drop, "drop", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			m := newManager(t, ns, manager.Options{})
			createConfigMaps(t, ns, 5)
			start(t, m)
			var k keys
			release, inFlight := make(chan struct{}), make(chan struct{}, 5)
			r := reconcile.Func[reconcile.Request](func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
				inFlight <- struct{}{}
				<-release
				k.reconciled(req)
				return reconcile.Done(), nil
			})
			c, err := manager.NewController(m, tc.name, r, manager.For[*corev1.ConfigMap](nil),
				manager.WithOptions(controller.Options[reconcile.Request]{MaxConcurrentReconciles: 1, SpareWorkers: -1}))
			if err != nil {
				t.Fatal(err)
			}
			<-inFlight
			eventually(t, "the other keys to be queued", func() bool { return c.Queue().Len() == 4 })
			var stopping bool // when RemoveController first waits
			ctx := &signalDone{Context: t.Context(), asked: make(chan struct{}),
				first: func() { stopping = manager.ControllerStopping(m, tc.name) }}
			removed := make(chan error, 1)
			go func() { removed <- m.RemoveController(ctx, tc.name, tc.how) }()
			if tc.how == manager.Drop {
				eventually(t, "the queue to shut down", c.Queue().ShuttingDown)
			} else {
				<-ctx.asked
				if stopping {
					t.Error("RemoveController stopped the controller before draining its queue")
				}
			}
			close(release)
			select {
			case err := <-removed:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("RemoveController did not return within 30s")
			}
			if got := k.count(); got != tc.want {
				t.Errorf("%d keys reconciled, want %d", got, tc.want)
			}
		})
	}
}

// A controller removed before the manager starts never starts, and a Lister
// the user passed in stays registered: it is the user's.
func TestRemoveControllerBeforeStartKeepsTheUsersLister(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{})
	cms, err := cache.Register[*corev1.ConfigMap](m.Cache(), cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var k keys
	r := reconcile.Func[reconcile.Request](func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		k.reconciled(req)
		return reconcile.Done(), nil
	})
	if _, err := manager.NewController(m, "early", r, manager.For(&cms), manager.Owns[*corev1.Secret](nil)); err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, st := range m.Cache().Status() {
		for owner, n := range st.Owners {
			held = append(held, fmt.Sprintf("%s:%s:%d", owner, st.GVK.Kind, n))
		}
	}
	if want := []string{"early:Secret:1"}; !slices.Equal(held, want) {
		t.Errorf("owners holding types = %v, want %v: early's Secrets alone (the ConfigMap Lister is the user's)", held, want)
	}
	if err := m.RemoveController(t.Context(), "early", manager.Drop); err != nil {
		t.Fatal(err)
	}
	createConfigMaps(t, ns, 1)
	start(t, m)
	eventually(t, "the user's Lister to hold obj-000", func() bool { _, err := cms.Get(ns, "obj-000"); return err == nil })
	if st := m.Cache().Status(); len(st) != 1 || st[0].GVK.Kind != "ConfigMap" {
		t.Errorf("Status = %+v, want the user's ConfigMaps alone", st)
	}
	if k.count() != 0 {
		t.Errorf("a controller removed before Start reconciled %d keys", k.count())
	}
}

// A controller added to a running manager owns a type the cache runs
// already: Owns adds its index to the running informers, and the
// reconciler lists children through it.
func TestOwnsOnARunningManager(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{})
	secrets, err := cache.Register[*corev1.Secret](m.Cache(), cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, m)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	if err := m.UncachedClient().Create(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	child := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptrTo(true),
	}}}}
	if err := m.UncachedClient().Create(t.Context(), child); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Secret to be cached", func() bool { _, err := secrets.Get(ns, "child"); return err == nil })
	var cms *cache.Lister[*corev1.ConfigMap]
	children := make(chan int, 10)
	r := reconcile.Func[reconcile.Request](func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		cm, err := cms.Get(req.Namespace, req.Name)
		if err != nil {
			return reconcile.Done(), err
		}
		got, err := secrets.ControlledBy(cm)
		if err != nil {
			return reconcile.Done(), err
		}
		children <- len(got)
		return reconcile.Done(), nil
	})
	if _, err := manager.NewController(m, "owner", r, manager.For(&cms), manager.Owns(&secrets)); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-children:
		if n != 1 {
			t.Errorf("ControlledBy found %d children, want 1", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no reconcile within 30s")
	}
}

// A controller added to running managers at run time runs on the leader
// only, as one added before Start: the standby's waits until it is
// elected.
func TestControllerAddedAtRunTimeRunsOnTheLeader(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns, 3)
	var s spans
	managers := map[string]*manager.Manager{}
	var stops []*started
	for _, who := range []string{"a", "b"} {
		opts := leaderOptions(ns, true)
		opts.LeaderElection.Identity = who
		managers[who] = newManager(t, ns, opts)
		stops = append(stops, start(t, managers[who]))
		if who == "a" {
			eventually(t, "a to be elected", func() bool { return elected(managers["a"]) })
		}
	}
	for who, m := range managers {
		if _, err := manager.NewController(m, "late", s.reconciler(who), manager.For[*corev1.ConfigMap](nil)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "a's late controller to reconcile", func() bool { return s.count("a") > 10 })
	if elected(managers["b"]) || s.count("b") > 0 {
		t.Fatal("the standby was elected, or its late controller reconciled, while a held the lease")
	}
	if err := stops[0].stop(t); err != nil {
		t.Errorf("a's Start = %v after a clean stop", err)
	}
	eventually(t, "b's late controller to reconcile once b is elected", func() bool { return s.count("b") > 10 })
	if x, y, ok := s.overlaps(); ok {
		t.Errorf("two managers reconciled at once: %+v and %+v", x, y)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
