package cache_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
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
}
