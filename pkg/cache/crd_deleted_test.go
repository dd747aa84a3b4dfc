package cache_test

import (
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
)

var gadgetGVK = schema.GroupVersionKind{Group: "gone.opkit.dev", Version: "v1", Kind: "Gadget"}

// gadgetCRD returns a new Gadget CRD, which only the tests of deleted CRDs
// install.
func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.gone.opkit.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gadgetGVK.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Gadget", ListKind: "GadgetList", Plural: "gadgets", Singular: "gadget"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: gadgetGVK.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
}

func installGadgets(t *testing.T) {
	t.Helper()
	if _, err := envtest.InstallCRDs(env.Config(), envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgetCRD()}}); err != nil {
		t.Fatal(err)
	}
}

// uninstallGadgets deletes the Gadget CRD and waits until the API server
// no longer serves the kind.
func uninstallGadgets(t *testing.T) {
	t.Helper()
	if err := envtest.UninstallCRDs(env.Config(), envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgetCRD()}}); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, func() bool {
		_, err := dc.ServerResourcesForGroupVersion(gadgetGVK.GroupVersion().String())
		return apierrors.IsNotFound(err)
	})
}

func createGadget(t *testing.T, ns, name string) {
	t.Helper()
	g := &unstructured.Unstructured{}
	g.SetGroupVersionKind(gadgetGVK)
	g.SetNamespace(ns)
	g.SetName(name)
	if err := writeClient(t).Create(t.Context(), g); err != nil {
		t.Fatal(err)
	}
}

// A CRD deleted while its kind is cached: reads and the type's status say
// so, handlers are handed each object's delete once, and once the CRD is
// installed again the cache watches the kind afresh.
func TestCRDDeletedThenRecreated(t *testing.T) {
	ns := env.Namespace(t)
	installGadgets(t)
	t.Cleanup(func() {
		_ = envtest.UninstallCRDs(env.Config(), envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgetCRD()}})
	})
	reg := prometheus.NewRegistry()
	c := newCache(t, cache.Options{Namespaces: []string{ns}, CRDPollInterval: 250 * time.Millisecond, Registerer: reg})
	full, err := cache.Unstructured(c, gadgetGVK, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	md, err := cache.Metadata(c, gadgetGVK, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type reader struct {
		name   string
		list   func() (int, error)
		get    func(name string) error
		status func() cache.TypeStatus
		events *keyEvents
	}
	readers := []reader{
		{"unstructured", func() (int, error) { l, err := full.List(ns, nil); return len(l), err },
			func(n string) error { _, err := full.Get(ns, n); return err }, full.Status, &keyEvents{}},
		{"metadata", func() (int, error) { l, err := md.List(ns, nil); return len(l), err },
			func(n string) error { _, err := md.Get(ns, n); return err }, md.Status, &keyEvents{}},
	}
	if _, err := full.AddEventHandler(readers[0].events); err != nil {
		t.Fatal(err)
	}
	if _, err := md.AddEventHandler(readers[1].events); err != nil {
		t.Fatal(err)
	}
	start(t, c)
	createGadget(t, ns, "a")
	createGadget(t, ns, "b")
	for _, r := range readers {
		waitFor(t, 10*time.Second, func() bool { n, err := r.list(); return err == nil && n == 2 })
	}

	uninstallGadgets(t)
	deletedAt := time.Now()
	for _, r := range readers {
		var readErr error
		if !waitUntil(30*time.Second, func() bool { _, readErr = r.list(); return errors.Is(readErr, cache.ErrDeleted) }) {
			t.Fatalf("%s: List after the CRD was deleted = %v, want an error wrapping ErrDeleted", r.name, readErr)
		}
		t.Logf("%s: reads fail with ErrDeleted %v after discovery stopped serving the kind", r.name, time.Since(deletedAt).Round(time.Millisecond))
		if err := r.get("a"); !errors.Is(err, cache.ErrDeleted) || !errors.Is(err, cache.ErrNotInstalled) {
			t.Errorf("%s: Get after the CRD was deleted = %v, want ErrDeleted and ErrNotInstalled", r.name, err)
		}
		st := r.status()
		if st.Installed || st.Synced || st.Deleted.IsZero() || st.AfterStart || !errors.Is(st.Err, cache.ErrDeleted) ||
			!strings.Contains(st.Err.Error(), "CRD gadgets.gone.opkit.dev deleted at") ||
			!strings.Contains(st.Err.Error(), "waiting for it to be installed again") {
			t.Errorf("%s: Status after the CRD was deleted = %+v, want not installed, deleted, naming the CRD", r.name, st)
		}
		want := map[string]int{ns + "/a": 1, ns + "/b": 1}
		if !waitUntil(30*time.Second, func() bool { return cmp.Equal(r.events.deleted(), want) }) {
			t.Errorf("%s: deletes handed on = %v, want %v", r.name, r.events.deleted(), want)
		}
	}
	for _, st := range c.Status() {
		if !errors.Is(st.Err, cache.ErrDeleted) {
			t.Errorf("Cache.Status of %s (%s) = %v, want ErrDeleted", st.GVK, st.Form, st.Err)
		}
	}
	if n, ok := gadgetObjects(t, reg); ok {
		t.Errorf("%s of Gadgets while their CRD is deleted = %v, want no series", imetrics.CacheObjects, n)
	}

	installGadgets(t)
	installedAt := time.Now()
	createGadget(t, ns, "c")
	for _, r := range readers {
		if !waitUntil(30*time.Second, func() bool { return r.get("c") == nil }) {
			t.Fatalf("%s: the cache did not see a Gadget created after the CRD was installed again; status %+v", r.name, r.status())
		}
		t.Logf("%s: a Gadget created after the CRD was installed again is read %v after the install", r.name, time.Since(installedAt).Round(time.Millisecond))
		waitFor(t, 10*time.Second, func() bool { return r.status().Synced })
		if st := r.status(); !st.Installed || st.Err != nil || !st.Deleted.IsZero() {
			t.Errorf("%s: Status once the CRD is back = %+v, want installed, synced, no error", r.name, st)
		}
		// The informer stores c before it hands c's add to the handler.
		want := map[string]int{ns + "/a": 1, ns + "/b": 1, ns + "/c": 1}
		if !waitUntil(10*time.Second, func() bool { return cmp.Equal(r.events.added(), want) }) {
			t.Errorf("%s: adds handed on = %v, want %v", r.name, r.events.added(), want)
		}
		if got, want := r.events.deleted(), map[string]int{ns + "/a": 1, ns + "/b": 1}; !cmp.Equal(got, want) {
			t.Errorf("%s: deletes handed on = %v, want %v", r.name, got, want)
		}
	}
	if n, ok := gadgetObjects(t, reg); !ok || n != 1 {
		t.Errorf("%s of Gadgets once the CRD is back = %v (series: %v), want 1", imetrics.CacheObjects, n, ok)
	}
}

// gadgetObjects returns opkit_cache_objects of the unstructured Gadgets,
// and whether there is such a series.
func gadgetObjects(t *testing.T, reg prometheus.Gatherer) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != imetrics.CacheObjects {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == gadgetGVK.Kind && labels["form"] == "unstructured" {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// keyEvents counts the adds and deletes handed to it, by key.
type keyEvents struct {
	mu      sync.Mutex
	adds    map[string]int
	deletes map[string]int
}

func (e *keyEvents) OnAdd(obj any, _ bool) { e.count(&e.adds, obj) }
func (e *keyEvents) OnUpdate(_, _ any)     {}
func (e *keyEvents) OnDelete(obj any)      { e.count(&e.deletes, obj) }

func (e *keyEvents) count(m *map[string]int, obj any) {
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		panic(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[key]++
}

func (e *keyEvents) added() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.adds)
}

func (e *keyEvents) deleted() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.deletes)
}

// waitUntil reports whether cond held within d, checking every 10ms.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
