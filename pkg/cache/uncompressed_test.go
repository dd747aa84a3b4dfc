package cache_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// gzipSeen records the lists and watches whose response came gzipped
// (Go's transport asked for gzip and decoded it, or the response says
// so).
type gzipSeen struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (g *gzipSeen) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.next.RoundTrip(req)
	if err == nil && (resp.Uncompressed || resp.Header.Get("Content-Encoding") == "gzip") {
		g.mu.Lock()
		g.seen = append(g.seen, req.URL.RequestURI())
		g.mu.Unlock()
	}
	return resp, err
}

// The informers' lists and watches ask for responses as they are: a
// streaming list of many objects is gzipped otherwise (WatchListCompression),
// which costs the operator and the API server more CPU than it saves on a
// cluster's network. Each form lists through a client of its own.
func TestListsAndWatchesUncompressed(t *testing.T) {
	ns := env.Namespace(t)
	cl := writeClient(t)
	// Well past the 128 KiB from which the API server compresses.
	for i := range 64 {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%02d", i), Namespace: ns},
			Data:       map[string]string{"k": strings.Repeat(fmt.Sprintf("%08d", i), 1024)},
		}
		if err := cl.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
	}
	for _, form := range []string{"typed", "metadata", "unstructured"} {
		t.Run(form, func(t *testing.T) {
			seen := &gzipSeen{}
			hc := wrappedClient(t, func(next http.RoundTripper) http.RoundTripper { seen.next = next; return seen })
			c := newCache(t, cache.Options{Namespaces: []string{ns}, HTTPClient: hc})
			gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
			var err error
			switch form {
			case "typed":
				_, err = cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
			case "metadata":
				_, err = cache.Metadata(c, gvk, cache.TypeOptions{})
			default:
				_, err = cache.Unstructured(c, gvk, cache.TypeOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
			start(t, c)
			seen.mu.Lock()
			defer seen.mu.Unlock()
			if len(seen.seen) > 0 {
				t.Errorf("gzipped responses to %q: the cache's lists and watches must not ask for compression", seen.seen)
			}
		})
	}
}
