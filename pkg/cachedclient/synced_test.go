package cachedclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/cachedclient"
)

// A read before the kind has synced waits for it, as controller-runtime's
// cached client does, and a read before the cache starts is
// controller-runtime's ErrCacheNotStarted. onepassword-operator's main
// starts a goroutine before the manager that creates its Connect
// Deployment when a Get finds none, retrying on ErrCacheNotStarted: on
// opkit the Get was "not started" (so it exited) or, once started, read a
// cache still listing, so the Deployment it did not find was created
// twice.
func TestReadsWaitForTheKindToSync(t *testing.T) {
	ns := env.Namespace(t)
	w, err := crclient.New(env.Config(), crclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%02d", i)}}
		if err := w.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
	}
	// The informers' lists are slowed down, so that a read at once after
	// Start comes while the cache is still listing.
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if strings.HasSuffix(req.URL.Path, "/configmaps") { // the list, or the watch-list that replaces it
				time.Sleep(time.Second)
			}
			return rt.RoundTrip(req)
		})
	})
	c, err := cache.New(cfg, cache.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	missing := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Missing"}
	if _, err := cache.Unstructured(c, missing, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	r := cachedclient.NewReader(c)
	key := crclient.ObjectKey{Namespace: ns, Name: fmt.Sprintf("cm-%02d", n-1)} // created last
	err = r.Get(t.Context(), key, &corev1.ConfigMap{})
	if notStarted := (&crcache.ErrCacheNotStarted{}); !errors.As(err, &notStarted) {
		t.Fatalf("Get before the cache starts = %v, want controller-runtime's ErrCacheNotStarted", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// No WaitForSync: the reads wait themselves.
	if err := r.Get(t.Context(), key, &corev1.ConfigMap{}); err != nil {
		t.Errorf("Get at once after Start = %v, want the ConfigMap: a read waits for its kind to sync", err)
	}
	var list corev1.ConfigMapList
	if err := r.List(t.Context(), &list); err != nil || len(list.Items) != n {
		t.Errorf("List at once after Start = %d items, %v; want all %d", len(list.Items), err, n)
	}
	// A kind the API server does not serve cannot sync: the read says so
	// once the cache has looked it up, rather than waiting for ever.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(missing)
	bounded, stop := context.WithTimeout(t.Context(), 2*time.Minute)
	defer stop()
	if err := r.Get(bounded, crclient.ObjectKey{Namespace: ns, Name: "x"}, u); !errors.Is(err, cache.ErrNotInstalled) {
		t.Errorf("Get of a kind not served = %v, want an error wrapping cache.ErrNotInstalled", err)
	}
	// A read whose context ends first says the kind had not synced.
	c2, err := cache.New(env.Config(), cache.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Register[*corev1.Secret](c2, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	stopped, cancel2 := context.WithCancel(t.Context())
	cancel2() // the informers never list
	if err := c2.Start(stopped); err != nil {
		t.Fatal(err)
	}
	short, stopShort := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer stopShort()
	if err := cachedclient.NewReader(c2).Get(short, key, &corev1.Secret{}); !errors.Is(err, cache.ErrNotSynced) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get whose context ends before the sync = %v, want ErrNotSynced and the deadline", err)
	}
	// A write does not wait for the sync: the cached client's Update
	// compares with the cache only when the kind has synced. Had it
	// waited, the context would have ended before the write was sent.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "written"}}
	if err := w.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	secret.StringData = map[string]string{"k": "v"}
	write, stopWrite := context.WithTimeout(t.Context(), 10*time.Second)
	defer stopWrite()
	if err := cachedclient.New(cachedclient.NewReader(c2), w).Update(write, secret); err != nil {
		t.Errorf("Update of a kind whose cache never syncs = %v, want it written", err)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
