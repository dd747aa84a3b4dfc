package cache_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// The last object of a namespace deleted while the watch is down: the
// informer relists (after a 410), finds nothing, and replaces its store
// with nothing. List must then agree with Get that the object is gone,
// although no index function ran for the empty relist.
func TestListAfterARelistThatEmptiesTheStore(t *testing.T) {
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "last", Namespace: ns}}
	if err := writeClient(t).Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	cw := &cutWatches{path: "/namespaces/" + ns + "/configmaps", cut: make(chan struct{}), release: make(chan struct{})}
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { cw.next = rt; return cw })
	c, err := cache.New(cfg, cache.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	if got, _ := cms.List(ns, nil); len(got) != 1 {
		t.Fatalf("List before the relist = %v, want [last]", names(got))
	}

	close(cw.cut) // the watch ends; the one resuming it waits for release
	waitFor(t, 30*time.Second, func() bool { return cw.n.Load() >= 2 })
	if err := writeClient(t).Delete(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	close(cw.release) // 410 Expired: the informer relists
	waitFor(t, 30*time.Second, func() bool {
		_, err := cms.Get(ns, "last")
		return apierrors.IsNotFound(err)
	})
	got, err := cms.List(ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("List after a relist that found nothing = %v, want nothing: Get says they are gone", names(got))
	}
}

// cutWatches ends the first watch of path once cut is closed, holds the
// watch that would resume it until release is closed and then answers it
// with 410 Expired, so that the informer relists what changed while it was
// not watching. Later watches pass.
type cutWatches struct {
	path         string
	next         http.RoundTripper
	n            atomic.Int64
	cut, release chan struct{}
}

func (c *cutWatches) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, c.path) || req.URL.Query().Get("watch") != "true" {
		return c.next.RoundTrip(req)
	}
	switch c.n.Add(1) {
	case 1:
		resp, err := c.next.RoundTrip(req)
		if err == nil {
			resp.Body = endWhen(resp.Body, c.cut)
		}
		return resp, err
	case 2:
		select {
		case <-c.release:
			return expired(req), nil
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	default:
		return c.next.RoundTrip(req)
	}
}
