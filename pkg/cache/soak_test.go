package cache_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"go.uber.org/goleak"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// soakGroup is the API group of the soak test's custom resources.
const soakGroup = "soak.opkit.dev"

// soakObjects is how many objects of each kind the write load updates.
const soakObjects = 3

// envInt returns the integer in the environment variable name, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// TestHoldsSoak installs OPKIT_SOAK_KINDS custom resource kinds (5 by
// default; make test-soak: 50) and has several owners acquire and release
// them in random order, OPKIT_SOAK_CYCLES times in all (60; make
// test-soak: 1,000), while a writer updates every object of every kind.
// Every owner holding a kind at the end sees each of its objects at its
// last write, through its own event handler and its Lister; once all is
// released, the cache lists no type, the goroutines are back to those
// before the first acquire, and a cached object is garbage.
func TestHoldsSoak(t *testing.T) {
	kinds, cycles := envInt(t, "OPKIT_SOAK_KINDS", 5), envInt(t, "OPKIT_SOAK_CYCLES", 60)
	seed := uint64(time.Now().UnixNano())
	t.Logf("%d kinds, %d cycles, seed %d", kinds, cycles, seed)
	ns := env.Namespace(t)
	gvks := installSoakKinds(t, kinds)
	w := newSoakWriter(t, ns, gvks)

	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	start(t, c)
	ignore := goleak.IgnoreCurrent()
	before := heapInUse()
	g0 := runtime.NumGoroutine()

	stopWriting, writing := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(writing)
		w.run(stopWriting)
	}()
	const owners = 4
	soakers := make([]*soaker, owners)
	var wg sync.WaitGroup
	for i := range soakers {
		s := &soaker{t: t, c: c, name: fmt.Sprintf("owner-%d", i), gvks: gvks,
			rng: rand.New(rand.NewPCG(seed, uint64(i))), held: map[schema.GroupVersionKind]*soakHold{}}
		soakers[i] = s
		n := cycles / owners
		if i < cycles%owners {
			n++
		}
		wg.Go(func() { s.cycle(n) })
	}
	wg.Wait()
	close(stopWriting)
	<-writing
	if t.Failed() {
		return
	}
	t.Logf("wrote %d updates; goroutines %d before, %d while held; heap in use %.1f MiB before",
		w.writes(), g0, runtime.NumGoroutine(), mib(before))

	held := 0
	for _, s := range soakers {
		held += s.verify(w)
	}
	// Remember an object the cache holds, to see it collected once
	// released.
	var cached weak.Pointer[unstructured.Unstructured]
	for _, s := range soakers {
		for _, h := range s.held {
			if objs, err := h.lister.List(ns, nil); err == nil && len(objs) > 0 {
				cached = weak.Make(objs[0])
			}
		}
	}
	for _, s := range soakers {
		s.releaseAll()
	}
	if st := c.Status(); len(st) != 0 {
		t.Errorf("Status after every release lists %d types, want none: %+v", len(st), st)
	}
	goroutinesBack(t, ignore)
	runtime.GC()
	after := heapInUse()
	t.Logf("%d holds verified at the end; goroutines %d after release; heap in use %.1f MiB before, %.1f MiB after",
		held, runtime.NumGoroutine(), mib(before), mib(after))
	if held > 0 && cached.Value() != nil {
		t.Errorf("an object of a released kind is still reachable after GC: the cache kept it")
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// installSoakKinds installs n namespaced kinds Soak0… of soakGroup, each
// keeping any spec, and uninstalls them when the test ends.
func installSoakKinds(t *testing.T, n int) []schema.GroupVersionKind {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	var gvks []schema.GroupVersionKind
	for i := range n {
		kind := fmt.Sprintf("Soak%d", i)
		plural := strings.ToLower(kind) + "s"
		crds = append(crds, &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + soakGroup},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: soakGroup,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptr.To(true),
					}},
				}},
			},
		})
		gvks = append(gvks, schema.GroupVersionKind{Group: soakGroup, Version: "v1", Kind: kind})
	}
	installed, err := envtest.InstallCRDs(env.Config(), envtest.CRDInstallOptions{CRDs: crds})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := envtest.UninstallCRDs(env.Config(), envtest.CRDInstallOptions{CRDs: installed}); err != nil {
			t.Errorf("uninstall the soak CRDs: %v", err)
		}
	})
	return gvks
}

// soakWriter creates soakObjects objects of each kind, then updates them
// round and round, soakWriters at a time, remembering the resourceVersion
// of each last write.
type soakWriter struct {
	t    *testing.T
	cl   client.Client
	ns   string
	gvks []schema.GroupVersionKind

	mu   sync.Mutex
	last map[string]string // by kind/name
	n    int
}

func newSoakWriter(t *testing.T, ns string, gvks []schema.GroupVersionKind) *soakWriter {
	t.Helper()
	w := &soakWriter{t: t, cl: writeClient(t), ns: ns, gvks: gvks, last: map[string]string{}}
	for _, gvk := range gvks {
		for i := range soakObjects {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			u.SetNamespace(ns)
			u.SetName(fmt.Sprintf("o%d", i))
			if err := w.cl.Create(t.Context(), u); err != nil {
				t.Fatal(err)
			}
			w.last[gvk.Kind+"/"+u.GetName()] = u.GetResourceVersion()
		}
	}
	return w
}

// soakWriters is how many goroutines write at once, each to its share of
// the kinds.
const soakWriters = 4

// run updates the objects until stop is closed. A write in flight then
// completes, so that the last write of each object is known.
func (w *soakWriter) run(stop <-chan struct{}) {
	var wg sync.WaitGroup
	for i := range soakWriters {
		var mine []schema.GroupVersionKind
		for k := i; k < len(w.gvks); k += soakWriters {
			mine = append(mine, w.gvks[k])
		}
		wg.Go(func() { w.write(stop, mine) })
	}
	wg.Wait()
}

func (w *soakWriter) write(stop <-chan struct{}, gvks []schema.GroupVersionKind) {
	ctx := w.t.Context()
	for round := 0; ; round++ {
		for _, gvk := range gvks {
			for i := range soakObjects {
				select {
				case <-stop:
					return
				default:
				}
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(gvk)
				u.SetNamespace(w.ns)
				u.SetName(fmt.Sprintf("o%d", i))
				patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"round":%d}}`, round))
				if err := w.cl.Patch(ctx, u, patch); err != nil {
					w.t.Errorf("update %s %s: %v", gvk.Kind, u.GetName(), err)
					return
				}
				w.mu.Lock()
				w.last[gvk.Kind+"/"+u.GetName()] = u.GetResourceVersion()
				w.n++
				w.mu.Unlock()
			}
		}
	}
}

func (w *soakWriter) lastWrite(kind, name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last[kind+"/"+name]
}

func (w *soakWriter) writes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// soaker is one owner, acquiring and releasing kinds at random.
type soaker struct {
	t    *testing.T
	c    *cache.Cache
	name string
	gvks []schema.GroupVersionKind
	rng  *rand.Rand
	held map[schema.GroupVersionKind]*soakHold
}

// soakHold is an owner's Lister of a kind, and what its own handler has
// seen: each object's latest resourceVersion.
type soakHold struct {
	lister  *cache.Lister[*unstructured.Unstructured]
	handler *cache.HandlerRegistration
	mu      sync.Mutex
	seen    map[string]string
}

func (h *soakHold) saw(obj any) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		h.mu.Lock()
		h.seen[u.GetName()] = u.GetResourceVersion()
		h.mu.Unlock()
	}
}

func (h *soakHold) seenAt(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen[name]
}

// cycle acquires a random kind it does not hold, or releases one it
// holds, n times.
func (s *soaker) cycle(n int) {
	for range n {
		gvk := s.gvks[s.rng.IntN(len(s.gvks))]
		if h := s.held[gvk]; h != nil {
			s.release(gvk, h)
			continue
		}
		if !s.acquire(gvk) {
			return
		}
	}
}

func (s *soaker) acquire(gvk schema.GroupVersionKind) bool {
	l, err := cache.Unstructured(s.c, gvk, cache.TypeOptions{Owner: s.name})
	if err != nil {
		s.t.Errorf("%s: acquire %s: %v", s.name, gvk.Kind, err)
		return false
	}
	h := &soakHold{lister: l, seen: map[string]string{}}
	h.handler, err = l.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.saw(obj) },
		UpdateFunc: func(_, obj any) { h.saw(obj) },
	})
	if err != nil {
		s.t.Errorf("%s: handler of %s: %v", s.name, gvk.Kind, err)
		return false
	}
	s.held[gvk] = h
	deadline := time.Now().Add(30 * time.Second)
	for !h.handler.HasSynced() {
		if time.Now().After(deadline) {
			s.t.Errorf("%s: %s not synced within 30s of its acquire: %+v", s.name, gvk.Kind, s.c.Status())
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

func (s *soaker) release(gvk schema.GroupVersionKind, h *soakHold) {
	if err := h.handler.Remove(); err != nil {
		s.t.Errorf("%s: remove the handler of %s: %v", s.name, gvk.Kind, err)
	}
	h.lister.Release()
	delete(s.held, gvk)
}

func (s *soaker) releaseAll() {
	for gvk, h := range s.held {
		s.release(gvk, h)
	}
}

// verify waits until the owner's handler and Lister show every object of
// each kind it holds at its last write, and returns how many kinds.
func (s *soaker) verify(w *soakWriter) int {
	for gvk, h := range s.held {
		for i := range soakObjects {
			name := fmt.Sprintf("o%d", i)
			want := w.lastWrite(gvk.Kind, name)
			deadline := time.Now().Add(30 * time.Second)
			for h.seenAt(name) != want {
				if time.Now().After(deadline) {
					s.t.Errorf("%s: its handler saw %s %s at resourceVersion %q, not at the last write's %q: an event was lost",
						s.name, gvk.Kind, name, h.seenAt(name), want)
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if got, err := h.lister.Get(w.ns, name); err != nil || got.GetResourceVersion() != want {
				s.t.Errorf("%s: Get %s %s = %v, %v; want resourceVersion %q", s.name, gvk.Kind, name, got, err, want)
			}
		}
	}
	return len(s.held)
}
