package cache_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
)

func TestMetrics(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	reg := prometheus.NewPedanticRegistry()
	c := newCache(t, cache.Options{Namespaces: []string{ns}, Registerer: reg})
	if _, err := cache.For[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	start(t, c)

	// ConfigMaps of the namespace: ours, and kube-root-ca.crt if a
	// controller made it; none run here.
	want := `
# HELP opkit_cache_objects Objects in the cache, by type.
# TYPE opkit_cache_objects gauge
opkit_cache_objects{form="typed",group="",kind="ConfigMap",scope="` + ns + `",version="v1"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), cache.MetricObjects); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, cache.MetricFirstSync); n != 1 {
		t.Errorf("%d first-sync series, want 1", n)
	}
	for _, name := range []string{cache.MetricRelists, cache.MetricWatchRestarts} {
		if n := testutil.CollectAndCount(reg, name); n != 1 {
			t.Errorf("%d %s series, want 1 (initialised at zero)", n, name)
		}
	}
}

// recordingTransport records the requests that go through it.
type recordingTransport struct {
	next http.RoundTripper
	mu   *sync.Mutex
	urls *[]string
}

func (r recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	*r.urls = append(*r.urls, req.Method+" "+req.URL.RequestURI()+" accept="+req.Header.Get("Accept"))
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// With client-go's WatchListClient on (its default since 1.35) and a 1.37
// API server, an informer syncs by a streaming list: one watch with
// sendInitialEvents=true, and no list. A built-in type speaks protobuf.
func TestStreamingListInEffect(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	var mu sync.Mutex
	var urls []string
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return recordingTransport{rt, &mu, &urls} })
	c, err := cache.New(cfg, cache.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.For[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	start(t, c)
	mu.Lock()
	defer mu.Unlock()
	var lists, streams int
	for _, u := range urls {
		if !strings.Contains(u, "/configmaps") {
			continue
		}
		switch {
		case strings.Contains(u, "watch=true") && strings.Contains(u, "sendInitialEvents=true"):
			streams++
			if !strings.Contains(u, "accept=application/vnd.kubernetes.protobuf") {
				t.Errorf("a built-in type watched without protobuf: %s", u)
			}
			if !strings.Contains(u, "allowWatchBookmarks=true") {
				t.Errorf("watch without bookmarks: %s", u)
			}
		case !strings.Contains(u, "watch=true"):
			lists++
		}
	}
	t.Logf("configmap requests: %q", urls)
	if streams != 1 || lists != 0 {
		t.Errorf("%d streaming lists and %d lists, want 1 and 0", streams, lists)
	}
}
