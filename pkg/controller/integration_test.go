package controller_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// world is a cache of one test namespace, a write client and a metrics
// registry.
type world struct {
	ns    string
	cache *cache.Cache
	cms   *cache.Lister[*corev1.ConfigMap]
	cl    client.Client
	reg   *prometheus.Registry
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{ns: env.Namespace(t), reg: prometheus.NewRegistry()}
	var err error
	if w.cache, err = cache.New(env.Config(), cache.Options{Namespaces: []string{w.ns}}); err != nil {
		t.Fatal(err)
	}
	if w.cms, err = cache.Register[*corev1.ConfigMap](w.cache, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	if w.cl, err = client.New(env.Config(), client.Options{}); err != nil {
		t.Fatal(err)
	}
	return w
}

// run starts the cache and c until the test ends.
func (w *world) run(t *testing.T, c *controller.Controller[reconcile.Request]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	if err := w.cache.Start(ctx); err != nil {
		t.Fatal(err)
	}
	go func() { done <- c.Start(ctx) }()
}

func (w *world) create(t *testing.T, name string, lbls map[string]string, data map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns, Labels: lbls}, Data: data}
	if err := w.cl.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// copier copies each ConfigMap labelled role=source to <name>-copy, owned by
// it, reading only through the Lister.
func copier(w *world) reconcile.Func[reconcile.Request] {
	return func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		src, err := w.cms.Get(req.Namespace, req.Name)
		if apierrors.IsNotFound(err) {
			return reconcile.Done(), nil
		}
		if err != nil {
			return reconcile.Done(), err
		}
		want := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: req.Name + "-copy", Namespace: req.Namespace, Labels: map[string]string{"role": "copy"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: src.Name, UID: src.UID, Controller: ptr.To(true)}}},
			Data: src.Data, // shared with the cache, read only: the client only encodes it
		}
		got, err := w.cms.Get(req.Namespace, want.Name)
		switch {
		case apierrors.IsNotFound(err):
			return reconcile.Done(), client.IgnoreAlreadyExists(w.cl.Create(ctx, want))
		case err != nil:
			return reconcile.Done(), err
		case fmt.Sprint(got.Data) != fmt.Sprint(src.Data):
			want.ResourceVersion = got.ResourceVersion
			return reconcile.Done(), w.cl.Update(ctx, want)
		}
		return reconcile.Done(), nil
	}
}

func (w *world) copyData(name string) (map[string]string, bool) {
	got, err := w.cms.Get(w.ns, name+"-copy")
	if err != nil {
		return nil, false
	}
	return got.Data, true
}

// A controller reconciles ConfigMaps read through a Lister: it copies a
// source, follows its updates, and, through an owner handler, recreates a
// deleted copy.
func TestReconcilesThroughLister(t *testing.T) {
	w := newWorld(t)
	c, err := controller.New("copier", reconcile.Reconciler[reconcile.Request](copier(w)), controller.Options[reconcile.Request]{Registerer: w.reg})
	if err != nil {
		t.Fatal(err)
	}
	sources := source.LabelSelector[*corev1.ConfigMap](labels.SelectorFromSet(labels.Set{"role": "source"}))
	copies := source.LabelSelector[*corev1.ConfigMap](labels.SelectorFromSet(labels.Set{"role": "copy"}))
	for _, src := range []source.Source[reconcile.Request]{
		source.NewKind(w.cms, source.EnqueueObject[*corev1.ConfigMap](), sources),
		source.NewKind(w.cms, source.EnqueueOwner[*corev1.ConfigMap](schema.GroupKind{Kind: "ConfigMap"}, source.OwnerOptions{}), copies),
	} {
		if err := c.Watch(src); err != nil {
			t.Fatal(err)
		}
	}
	w.create(t, "before", map[string]string{"role": "source"}, map[string]string{"k": "0"})
	w.run(t, c)

	eventually(t, "the copy of a source created before start", func() bool { _, ok := w.copyData("before"); return ok })
	src := w.create(t, "live", map[string]string{"role": "source"}, map[string]string{"k": "1"})
	eventually(t, "the copy of a live source", func() bool { d, ok := w.copyData("live"); return ok && d["k"] == "1" })

	src.Data["k"] = "2"
	if err := w.cl.Update(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the copy to follow an update", func() bool { d, _ := w.copyData("live"); return d["k"] == "2" })

	copyObj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live-copy", Namespace: w.ns}}
	if err := w.cl.Delete(t.Context(), copyObj); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted copy to be recreated through its owner", func() bool {
		got, err := w.cms.Get(w.ns, "live-copy")
		return err == nil && got.UID != "" && got.DeletionTimestamp == nil && got.Data["k"] == "2"
	})
	if n := counter(t, w.reg, imetrics.ReconcileTotal, "controller", "copier", "result", imetrics.ResultSuccess); n < 4 {
		t.Errorf("%v successful reconciles, want at least 4", n)
	}
}

// keyRecorder is a reconciler that records the keys it is handed.
type keyRecorder struct {
	mu   sync.Mutex
	seen map[string]int
	do   func(ctx context.Context, req reconcile.Request) (reconcile.Result, error)
}

func (k *keyRecorder) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	k.mu.Lock()
	if k.seen == nil {
		k.seen = map[string]int{}
	}
	k.seen[req.String()]++
	k.mu.Unlock()
	if k.do != nil {
		return k.do(ctx, req)
	}
	return reconcile.Done(), nil
}

func (k *keyRecorder) count(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seen[key]
}

// A map handler queues keys related by a label, across namespaces.
func TestMapHandler(t *testing.T) {
	w := newWorld(t)
	var r keyRecorder
	c, err := controller.New("mapper", reconcile.Reconciler[reconcile.Request](&r), controller.Options[reconcile.Request]{})
	if err != nil {
		t.Fatal(err)
	}
	toTarget := source.EnqueueMapped(func(cm *corev1.ConfigMap) []reconcile.Request {
		if t := cm.Labels["target"]; t != "" {
			return []reconcile.Request{{Namespace: "elsewhere", Name: t}}
		}
		return nil
	})
	if err := c.Watch(source.NewKind(w.cms, toTarget)); err != nil {
		t.Fatal(err)
	}
	w.run(t, c)
	w.create(t, "a", map[string]string{"target": "t1"}, nil)
	w.create(t, "b", map[string]string{"target": "t2"}, nil)
	eventually(t, "both mapped keys", func() bool { return r.count("elsewhere/t1") > 0 && r.count("elsewhere/t2") > 0 })
	if n := r.count(w.ns + "/a"); n != 0 {
		t.Errorf("the object itself was queued %d times; only its mapped keys should be", n)
	}
}

// Predicates filter updates: a change of data alone does not pass a
// labels-changed predicate, a change of labels does.
func TestPredicatesFilterUpdates(t *testing.T) {
	w := newWorld(t)
	var r keyRecorder
	c, err := controller.New("labels", reconcile.Reconciler[reconcile.Request](&r), controller.Options[reconcile.Request]{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(source.NewKind(w.cms, source.EnqueueObject[*corev1.ConfigMap](), source.LabelsChanged)); err != nil {
		t.Fatal(err)
	}
	w.run(t, c)
	cm := w.create(t, "a", nil, map[string]string{"k": "1"})
	key := w.ns + "/a"
	eventually(t, "the create", func() bool { return r.count(key) == 1 })

	cm.Data["k"] = "2"
	if err := w.cl.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	w.create(t, "marker", nil, nil) // events are in order: once this is seen, so was the update
	eventually(t, "the marker", func() bool { return r.count(w.ns+"/marker") == 1 })
	if n := r.count(key); n != 1 {
		t.Errorf("a data-only update was reconciled: %d reconciles", n)
	}

	cm.Labels = map[string]string{"new": "label"}
	if err := w.cl.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the label change", func() bool { return r.count(key) == 2 })
}

// A reconciler that panics is recovered, counted and retried, and other keys
// keep flowing; one that overruns its timeout has its context ended with
// ErrReconcileTimeout, is counted and retried.
func TestPanicAndTimeout(t *testing.T) {
	w := newWorld(t)
	var panicked, timedOut atomic.Bool
	var cause atomic.Pointer[error]
	r := keyRecorder{do: func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		switch {
		case req.Name == "panics" && !panicked.Swap(true):
			panic("index out of range") // as a buggy reconciler would
		case req.Name == "slow" && !timedOut.Load():
			<-ctx.Done()
			err := context.Cause(ctx)
			cause.Store(&err)
			timedOut.Store(true)
			return reconcile.Done(), err
		}
		return reconcile.Done(), nil
	}}
	c, err := controller.New("faulty", reconcile.Reconciler[reconcile.Request](&r), controller.Options[reconcile.Request]{
		Registerer: w.reg, ReconcileTimeout: 500 * time.Millisecond, MaxConcurrentReconciles: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(source.NewKind(w.cms, source.EnqueueObject[*corev1.ConfigMap]())); err != nil {
		t.Fatal(err)
	}
	w.run(t, c)
	w.create(t, "panics", nil, nil)
	eventually(t, "the panicking key to be retried", func() bool { return r.count(w.ns+"/panics") >= 2 })
	w.create(t, "slow", nil, nil)
	w.create(t, "fine", nil, nil)
	eventually(t, "the slow key to be retried", func() bool { return r.count(w.ns+"/slow") >= 2 })
	eventually(t, "other keys to flow", func() bool { return r.count(w.ns+"/fine") >= 1 })

	if got := *cause.Load(); !errors.Is(got, controller.ErrReconcileTimeout) {
		t.Errorf("the slow reconcile's context ended with %v, want ErrReconcileTimeout", got)
	}
	for name, want := range map[string]float64{imetrics.ReconcilePanics: 1, imetrics.ReconcileTimeouts: 1} {
		if got := counter(t, w.reg, name, "controller", "faulty"); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
