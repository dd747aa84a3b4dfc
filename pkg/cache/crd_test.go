package cache_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/opkit-dev/opkit/pkg/cache"
)

var widgetGVK = schema.GroupVersionKind{Group: "test.opkit.dev", Version: "v1", Kind: "Widget"}

// countingTransport counts the requests that go through it.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// A type whose CRD is not installed is reported as such, costs a lookup every
// CRDPollInterval and no more, and syncs within seconds of the CRD's
// installation, without a restart.
func TestCRDInstalledAfterStart(t *testing.T) {
	ns := env.Namespace(t)
	var requests atomic.Int64
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &requests} })
	c, err := cache.New(cfg, cache.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	widgets, err := cache.Unstructured(c, widgetGVK, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The same custom resource as a Go type, in a cache of its own that
	// records its requests: it must speak JSON, as custom resources have
	// no protobuf encoding.
	var mu sync.Mutex
	var urls []string
	typedCfg := rest.CopyConfig(env.Config())
	typedCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return recordingTransport{rt, &mu, &urls} })
	typedC, err := cache.New(typedCfg, cache.Options{Namespaces: []string{ns}, Scheme: widgetScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	typedWidgets, err := cache.Register[*Widget](typedC, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for _, cc := range []*cache.Cache{c, typedC} {
		if err := cc.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}

	const idle = 3 * time.Second
	time.Sleep(idle)
	st := c.Status()[0]
	if st.Installed || st.Synced || !errors.Is(st.Err, cache.ErrNotInstalled) || !strings.Contains(st.Err.Error(), "Widget") {
		t.Fatalf("status before the CRD exists = %+v, want not installed, naming Widget", st)
	}
	if _, err := widgets.Get(ns, "w"); !errors.Is(err, cache.ErrNotInstalled) {
		t.Errorf("Get before the CRD exists = %v, want ErrNotInstalled", err)
	}
	if _, err := typedWidgets.Get(ns, "w"); !errors.Is(err, cache.ErrNotInstalled) {
		t.Errorf("typed Get before the CRD exists = %v, want ErrNotInstalled", err)
	}
	// Discovery takes a few requests per lookup; a lookup every 2s.
	if n := requests.Load(); n > 20 {
		t.Errorf("%d requests in %v while waiting for the CRD: the cache is spinning", n, idle)
	}

	crds, err := envtest.InstallCRDs(env.Config(), envtest.CRDInstallOptions{Paths: []string{"testdata/crds"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := envtest.UninstallCRDs(env.Config(), envtest.CRDInstallOptions{CRDs: crds}); err != nil {
			t.Errorf("uninstall CRDs: %v", err)
		}
	})
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	w.SetNamespace(ns)
	w.SetName("w")
	if err := writeClient(t).Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}

	syncCtx, cancelSync := context.WithTimeout(ctx, 15*time.Second)
	defer cancelSync()
	if err := c.WaitForSync(syncCtx); err != nil {
		t.Fatalf("not synced within 15s of installing the CRD: %v", err)
	}
	waitFor(t, 10*time.Second, func() bool { _, err := widgets.Get(ns, "w"); return err == nil })
	if st := c.Status()[0]; !st.Installed || !st.Synced || st.Err != nil {
		t.Errorf("status after install = %+v", st)
	}

	if err := typedC.WaitForSync(syncCtx); err != nil {
		t.Fatalf("typed cache not synced within 15s of installing the CRD: %v", err)
	}
	waitFor(t, 10*time.Second, func() bool { _, err := typedWidgets.Get(ns, "w"); return err == nil })
	mu.Lock()
	defer mu.Unlock()
	watches := 0
	for _, u := range urls {
		if !strings.Contains(u, "/widgets") || !strings.Contains(u, "watch=true") {
			continue
		}
		watches++
		if !strings.Contains(u, "accept=application/json") || strings.Contains(u, "protobuf") {
			t.Errorf("a custom resource watched in another encoding than JSON: %s", u)
		}
	}
	if watches == 0 {
		t.Errorf("no watch of widgets among the typed cache's requests: %q", urls)
	}
}

// Widget is the test CRD's kind as a Go type.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              map[string]string `json:"spec,omitempty"`
}

func (w *Widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = maps.Clone(w.Spec)
	return &out
}

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

func (l *WidgetList) DeepCopyObject() runtime.Object {
	out := &WidgetList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopyObject().(*Widget))
	}
	return out
}

func widgetScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	s.AddKnownTypes(widgetGVK.GroupVersion(), &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(s, widgetGVK.GroupVersion())
	return s
}
