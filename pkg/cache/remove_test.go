package cache_test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// Remove stops the type's informers: their watches end, and the cache's
// other types keep theirs.
func TestRemoveEndsTheWatch(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	var open atomic.Int64 // ConfigMap watches open
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return openWatches{rt, "/configmaps", &open} })
	c, err := cache.New(cfg, cache.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := cache.Register[*corev1.Secret](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	if n := open.Load(); n != 1 {
		t.Fatalf("%d ConfigMap watches open after sync, want 1", n)
	}
	cache.Remove(cms)
	waitFor(t, 10*time.Second, func() bool { return open.Load() == 0 })
	if st := c.Status(); len(st) != 1 || st[0].GVK.Kind != "Secret" || !st[0].Synced {
		t.Errorf("Status after removing ConfigMaps = %+v, want Secrets alone, synced", st)
	}
	if _, err := secrets.List(ns, nil); err != nil {
		t.Errorf("List of a type not removed = %v", err)
	}
}

// openWatches counts the watches of paths ending in suffix whose response
// body is not closed yet.
type openWatches struct {
	next   http.RoundTripper
	suffix string
	open   *atomic.Int64
}

func (o openWatches) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := o.next.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, o.suffix) || req.URL.Query().Get("watch") != "true" {
		return resp, err
	}
	o.open.Add(1)
	resp.Body = &countedBody{ReadCloser: resp.Body, open: o.open}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	open   *atomic.Int64
	closed atomic.Bool
}

func (b *countedBody) Close() error {
	if b.closed.CompareAndSwap(false, true) {
		b.open.Add(-1)
	}
	return b.ReadCloser.Close()
}
