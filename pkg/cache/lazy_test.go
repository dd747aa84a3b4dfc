package cache_test

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
)

// getCounter counts the GETs of single objects (not lists or watches) that
// go through it, by path, and holds each until gate, if set, is closed.
type getCounter struct {
	next http.RoundTripper
	mu   *sync.Mutex
	gets map[string]int
	seen chan string   // receives each GET's path, if not nil
	gate chan struct{} // GETs wait for it to close, if not nil
}

func (g getCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	// A GET of one object has its name after the resource; lists and
	// watches end with the resource.
	if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/configmaps/") {
		g.mu.Lock()
		g.gets[req.URL.Path]++
		g.mu.Unlock()
		if g.seen != nil {
			g.seen <- req.URL.Path
		}
		if g.gate != nil {
			<-g.gate
		}
	}
	return g.next.RoundTrip(req)
}

func (g getCounter) count(path string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gets[path]
}

// lazyWorld is a started cache of one namespace's ConfigMaps through a
// LazyLister, with its GETs counted.
type lazyWorld struct {
	ns   string
	c    *cache.Cache
	l    *cache.LazyLister[*corev1.ConfigMap]
	reg  *prometheus.Registry
	gets getCounter
}

func newLazyWorld(t *testing.T, g getCounter) *lazyWorld {
	t.Helper()
	w := &lazyWorld{ns: env.Namespace(t), reg: prometheus.NewPedanticRegistry()}
	createConfigMaps(t, w.ns)
	g.next, g.mu, g.gets = nil, &sync.Mutex{}, map[string]int{}
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { g.next = rt; return g })
	w.gets = g
	c, err := cache.New(cfg, cache.Options{Namespaces: []string{w.ns}, Registerer: w.reg})
	if err != nil {
		t.Fatal(err)
	}
	if w.l, err = cache.Lazy[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	w.c = c
	start(t, c)
	return w
}

func (w *lazyWorld) path(name string) string {
	return "/api/v1/namespaces/" + w.ns + "/configmaps/" + name
}

// metric returns the value of the LazyLister's metric name.
func (w *lazyWorld) metric(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := w.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		if len(mf.Metric) != 1 {
			t.Fatalf("%d series of %s, want 1", len(mf.Metric), name)
		}
		m := mf.Metric[0]
		if m.Counter != nil {
			return m.Counter.GetValue()
		}
		return m.Gauge.GetValue()
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// A LazyLister caches metadata only; a Get fetches the full object once,
// stripped like the cache's objects, and hands the same object to every
// later reader.
func TestLazyFetchesOnceAndShares(t *testing.T) {
	w := newLazyWorld(t, getCounter{})
	m, err := w.l.Metadata().Get(w.ns, "csa")
	if err != nil {
		t.Fatal(err)
	}
	if m.Labels["app"] != "a" || m.ManagedFields != nil {
		t.Errorf("metadata = %+v, want labels and no managedFields", m.ObjectMeta)
	}
	if w.metric(t, imetrics.CacheLazyObjects) != 0 || w.metric(t, imetrics.CacheLazyFetches) != 0 {
		t.Errorf("objects held or fetched before any Get")
	}
	got, err := w.l.Get(t.Context(), w.ns, "csa")
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "v" || got.ManagedFields != nil {
		t.Errorf("Get = data %v, managedFields %v; want the data and no managedFields", got.Data, got.ManagedFields)
	}
	if diff := cmp.Diff(map[string]string{"team": "blue"}, got.Annotations); diff != "" {
		t.Errorf("annotations, last-applied stripped (-want +got):\n%s", diff)
	}
	again, err := w.l.Get(t.Context(), w.ns, "csa")
	if err != nil {
		t.Fatal(err)
	}
	if again != got {
		t.Error("two Gets returned different objects: the LazyLister copied or fetched again")
	}
	if n := w.gets.count(w.path("csa")); n != 1 {
		t.Errorf("%d GETs of csa, want 1", n)
	}
	if f, h := w.metric(t, imetrics.CacheLazyFetches), w.metric(t, imetrics.CacheLazyObjects); f != 1 || h != 1 {
		t.Errorf("%s = %v, %s = %v; want 1 and 1", imetrics.CacheLazyFetches, f, imetrics.CacheLazyObjects, h)
	}
	if _, err := w.l.Get(t.Context(), w.ns, "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("Get(missing) = %v, want NotFound", err)
	}
	if n := w.gets.count(w.path("missing")); n != 0 {
		t.Errorf("%d GETs of an object the metadata does not hold, want 0", n)
	}
}

// A change the metadata informer sees drops the held object, and the next
// Get fetches the new one; a delete drops it, and a Get is then NotFound
// without a request.
func TestLazyDropsChangedAndDeleted(t *testing.T) {
	w := newLazyWorld(t, getCounter{})
	ctx := t.Context()
	old, err := w.l.Get(ctx, w.ns, "plain")
	if err != nil {
		t.Fatal(err)
	}
	cl := writeClient(t)
	changed := old.DeepCopy()
	changed.Data = map[string]string{"k": "new"}
	if err := cl.Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool { return w.metric(t, imetrics.CacheLazyObjects) == 0 })
	got, err := w.l.Get(ctx, w.ns, "plain")
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "new" || got.ResourceVersion != changed.ResourceVersion {
		t.Errorf("Get after the update = data %v at %s, want k=new at %s", got.Data, got.ResourceVersion, changed.ResourceVersion)
	}
	if n := w.gets.count(w.path("plain")); n != 2 {
		t.Errorf("%d GETs of plain, want 2: one before the update, one after", n)
	}

	if err := cl.Delete(ctx, got.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool { return w.metric(t, imetrics.CacheLazyObjects) == 0 })
	if _, err := w.l.Get(ctx, w.ns, "plain"); !apierrors.IsNotFound(err) {
		t.Errorf("Get after the delete = %v, want NotFound", err)
	}
	if n := w.gets.count(w.path("plain")); n != 2 {
		t.Errorf("%d GETs of plain, want 2: none after the delete", n)
	}
}

// A Get right after a change, before the metadata informer's handlers have
// run, does not return the held object of the old version: it checks the
// metadata store's resourceVersion.
func TestLazyGetFollowsMetadataStore(t *testing.T) {
	w := newLazyWorld(t, getCounter{})
	ctx := t.Context()
	old, err := w.l.Get(ctx, w.ns, "ssa")
	if err != nil {
		t.Fatal(err)
	}
	changed := old.DeepCopy()
	changed.Data = map[string]string{"k": "newer"}
	if err := writeClient(t).Update(ctx, changed, client.FieldOwner("test")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool {
		m, err := w.l.Metadata().Get(w.ns, "ssa")
		return err == nil && m.ResourceVersion == changed.ResourceVersion
	})
	got, err := w.l.Get(ctx, w.ns, "ssa")
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "newer" {
		t.Errorf("Get once the metadata holds the update = data %v, want k=newer", got.Data)
	}
}

// Concurrent Gets of one object share one fetch.
func TestLazyConcurrentGetsFetchOnce(t *testing.T) {
	seen, gate := make(chan string, 16), make(chan struct{})
	w := newLazyWorld(t, getCounter{seen: seen, gate: gate})
	ctx := t.Context()
	const readers = 8
	got := make([]*corev1.ConfigMap, readers)
	errs := make([]error, readers)
	var wg sync.WaitGroup
	get := func(i int) {
		defer wg.Done()
		got[i], errs[i] = w.l.Get(ctx, w.ns, "csa")
	}
	wg.Add(readers)
	go get(0)
	<-seen // the first Get's request is held at the gate
	for i := 1; i < readers; i++ {
		go get(i)
	}
	waitFor(t, 30*time.Second, func() bool {
		select {
		case p := <-seen:
			t.Errorf("a second GET of %s while the first was under way", p)
			return true
		default:
		}
		return cache.LazyJoined(w.l, w.ns, "csa") == readers-1
	})
	close(gate)
	wg.Wait()
	for i := range readers {
		if errs[i] != nil || got[i] != got[0] {
			t.Errorf("Get %d = %p, %v; want the object of Get 0 (%p)", i, got[i], errs[i], got[0])
		}
	}
	if n := w.gets.count(w.path("csa")); n != 1 {
		t.Errorf("%d GETs of csa by %d concurrent Gets, want 1", n, readers)
	}
	if f := w.metric(t, imetrics.CacheLazyFetches); f != 1 {
		t.Errorf("%s = %v, want 1", imetrics.CacheLazyFetches, f)
	}
}

// A user who may list and watch ConfigMaps but not get them: the metadata
// syncs, and a Get's error is Forbidden and names the object, the verb and
// the resource to grant.
func TestLazyForbiddenGetNamesVerb(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	const user = "opkit-test-list-watch-only"
	grant(t, ns, user, "list", "watch")
	cfg := env.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := cache.New(cfg, cache.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := cache.Lazy[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	_, err = l.Get(t.Context(), ns, "csa")
	if !apierrors.IsForbidden(err) {
		t.Fatalf("Get = %v, want Forbidden", err)
	}
	for _, want := range []string{"get ConfigMap " + ns + "/csa", `allowing "get" on "configmaps" in namespace ` + ns} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Get error %q does not mention %q", err, want)
		}
	}
}

// The point of a LazyLister: after sync it holds metadata only. Measured on
// ConfigMaps created as users create them (half with kubectl's
// client-side apply, half server-side applied), the heap of a Lazy cache
// is logged beside that of a full one (Register) of the same objects, and must
// be smaller. Both keep the mutation detector's copies in tests, which
// doubles each alike; make bench (BenchmarkHeapConfigMaps/opkitlazy)
// measures without, beside controller-runtime's.
func TestLazyHeapAfterSync(t *testing.T) {
	const n = 400
	ns := env.Namespace(t)
	cl := writeClient(t)
	if err := parallel(n, func(i int) error { return createAsUsersDo(t.Context(), cl, benchConfigMap(ns, i), i) }); err != nil {
		t.Fatal(err)
	}
	// A cache's clients, mapper and informers take the same heap whatever
	// it holds: measured over an empty namespace, and subtracted.
	empty := env.Namespace(t)
	lazyOnly := func(c *cache.Cache) error {
		_, err := cache.Lazy[*corev1.ConfigMap](c, cache.TypeOptions{})
		return err
	}
	fullOnly := func(c *cache.Cache) error {
		_, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
		return err
	}
	lazy := heapOf(t, ns, lazyOnly) - heapOf(t, empty, lazyOnly)
	full := heapOf(t, ns, fullOnly) - heapOf(t, empty, fullOnly)
	t.Logf("heap after sync of %d ConfigMaps, beyond an empty cache's: Lazy %d B, Register %d B (%.2fx)", n, lazy, full, float64(lazy)/float64(full))
	if lazy >= full {
		t.Errorf("a Lazy cache takes %d B of heap, a full one %d B: want less", lazy, full)
	}
}

// heapOf returns the live heap that a cache of ns, with what register
// registers, takes once synced.
func heapOf(t *testing.T, ns string, register func(*cache.Cache) error) int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	before := liveHeap()
	c, err := cache.New(env.Config(), cache.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	if err := register(c); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	after := liveHeap()
	runtime.KeepAlive(c)
	return int64(after) - int64(before)
}

// The mutation detector watches fetched objects as it does cached ones: a
// reader that modifies one is reported, naming the object and the field.
func TestLazyMutationIsReported(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}, Mutations: cache.MutationOptions{
		Detect: true, Interval: -1, OnMutation: func(*cache.MutationError) {},
	}})
	l, err := cache.Lazy[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	got, err := l.Get(t.Context(), ns, "csa")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckMutations(); err != nil {
		t.Fatalf("CheckMutations before any change = %v", err)
	}
	got.Data["k"] = "modified in place"
	var me *cache.MutationError
	if err := c.CheckMutations(); !errors.As(err, &me) || me.Name != "csa" || !slices.Contains(me.Fields, "data.k") {
		t.Errorf("CheckMutations after modifying a fetched object = %v, want a MutationError naming csa and data.k", err)
	}
}
