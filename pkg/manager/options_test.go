package manager_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// countingTransport counts the requests that go through it.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// The cache's Scheme, Mapper and HTTPClient, when set, are the cache's: the
// manager fills in only what is empty, as Options.Cache says.
func TestCacheOptionsHonoured(t *testing.T) {
	ns := env.Namespace(t)
	t.Run("Scheme", func(t *testing.T) {
		// A scheme without ConfigMaps: the cache must refuse to cache them.
		m := newManager(t, ns, manager.Options{Cache: cache.Options{Namespaces: []string{ns}, Scheme: runtime.NewScheme()}})
		if _, err := cache.Register[*corev1.ConfigMap](m.Cache(), cache.TypeOptions{}); err == nil {
			t.Error("cache.Register[*corev1.ConfigMap] succeeded: the cache uses the manager's scheme, not Options.Cache.Scheme")
		}
	})
	t.Run("Mapper", func(t *testing.T) {
		// A mapper that knows no kind: ConfigMaps must be "not installed".
		m := newManager(t, ns, manager.Options{Cache: cache.Options{Namespaces: []string{ns}, Mapper: meta.NewDefaultRESTMapper(nil)}})
		if _, err := cache.Register[*corev1.ConfigMap](m.Cache(), cache.TypeOptions{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		if err := m.Cache().Start(ctx); err != nil {
			t.Fatal(err)
		}
		eventually(t, "ConfigMaps to be reported not installed", func() bool {
			s := m.Cache().Status()[0]
			if s.Synced {
				t.Fatal("ConfigMaps synced: the cache uses the manager's mapper, not Options.Cache.Mapper")
			}
			return errors.Is(s.Err, cache.ErrNotInstalled)
		})
	})
	t.Run("HTTPClient", func(t *testing.T) {
		var n atomic.Int64
		rt, err := rest.TransportFor(env.Config())
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: countingTransport{rt, &n}}
		m := newManager(t, ns, manager.Options{Cache: cache.Options{Namespaces: []string{ns}, HTTPClient: hc}})
		if _, err := cache.Register[*corev1.ConfigMap](m.Cache(), cache.TypeOptions{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		if err := m.Cache().Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Cache().WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
		if n.Load() == 0 {
			t.Error("the cache synced without a request through Options.Cache.HTTPClient")
		}
	})
}
