package cache_test

import (
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
)

func TestMetrics(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	reg := prometheus.NewPedanticRegistry()
	c := newCache(t, cache.Options{Namespaces: []string{ns}, Registerer: reg})
	if _, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
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
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), imetrics.CacheObjects); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, imetrics.CacheFirstSync); n != 1 {
		t.Errorf("%d first-sync series, want 1", n)
	}
	for _, name := range []string{imetrics.CacheRelists, imetrics.CacheWatchRestarts} {
		if n := testutil.CollectAndCount(reg, name); n != 1 {
			t.Errorf("%d %s series, want 1 (initialised at zero)", n, name)
		}
	}
}

// opkit_cache_object_bytes estimates the cached objects' bytes: with fewer
// objects than the sampler's warm-up, every one is measured, so it is the
// sum of their protobuf sizes as cached (managedFields stripped).
func TestMetricsObjectBytes(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	reg := prometheus.NewPedanticRegistry()
	c := newCache(t, cache.Options{Namespaces: []string{ns}, Registerer: reg})
	l, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	cms, err := l.List(ns, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, cm := range cms {
		want += cm.Size()
	}
	var got float64
	for _, m := range gathered(t, reg, imetrics.CacheObjectBytes) {
		got += m.GetGauge().GetValue()
	}
	if math.Abs(got-float64(want)) > 1 {
		t.Errorf("%s = %v for %d ConfigMaps, want the sum of their protobuf sizes, %d", imetrics.CacheObjectBytes, got, len(cms), want)
	}
}

// gathered returns the series of name in reg.
func gathered(t *testing.T, reg prometheus.Gatherer, name string) []*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	t.Fatalf("no %s series", name)
	return nil
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

// With client-go's WatchListClient on (its default since 1.35) and an API
// server with the WatchList gate on, an informer syncs by a streaming
// list: one watch with sendInitialEvents=true, and no list. A built-in
// type speaks protobuf.
func TestStreamingListInEffect(t *testing.T) {
	env.RequireFeatureGate(t, "WatchList")
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
	if _, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
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

// A watch that ends is resumed (a watch restart); a watch refused as
// expired makes the informer list again (a relist, by a streaming list).
func TestMetricsCountRestartsAndRelists(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	cfg := rest.CopyConfig(env.Config())
	var watches atomic.Int64
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return flakyWatches{path: "/namespaces/" + ns + "/configmaps", next: rt, n: &watches}
	})
	reg := prometheus.NewPedanticRegistry()
	c, err := cache.New(cfg, cache.Options{Namespaces: []string{ns}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	start(t, c)
	// The first watch ends 2s after it began; the one resuming it is
	// refused with 410 Expired; the informer then streams a list again.
	waitFor(t, 30*time.Second, func() bool { return watches.Load() >= 3 })
	labels := `{form="typed",group="",kind="ConfigMap",scope="` + ns + `",version="v1"}`
	want := `
# HELP opkit_cache_relists_total Full lists after the first, by type.
# TYPE opkit_cache_relists_total counter
opkit_cache_relists_total` + labels + ` 1
# HELP opkit_cache_watch_restarts_total Watches opened after the first, by type.
# TYPE opkit_cache_watch_restarts_total counter
opkit_cache_watch_restarts_total` + labels + ` 2
`
	waitFor(t, 10*time.Second, func() bool {
		return testutil.GatherAndCompare(reg, strings.NewReader(want), imetrics.CacheRelists, imetrics.CacheWatchRestarts) == nil
	})
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), imetrics.CacheRelists, imetrics.CacheWatchRestarts); err != nil {
		t.Error(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == imetrics.CacheFirstSync {
			if v := mf.GetMetric()[0].GetGauge().GetValue(); v <= 0 || v > 30 {
				t.Errorf("%s = %v, want the seconds the first sync took", imetrics.CacheFirstSync, v)
			}
		}
	}
}

// flakyWatches ends the first watch of path 2s after it starts and answers
// the second with 410 Expired; later ones pass.
type flakyWatches struct {
	path string
	next http.RoundTripper
	n    *atomic.Int64
}

func (f flakyWatches) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, f.path) || req.URL.Query().Get("watch") != "true" {
		return f.next.RoundTrip(req)
	}
	switch f.n.Add(1) {
	case 1:
		resp, err := f.next.RoundTrip(req)
		if err == nil {
			resp.Body = endAfter(resp.Body, 2*time.Second)
		}
		return resp, err
	case 2:
		return expired(req), nil
	default:
		return f.next.RoundTrip(req)
	}
}

// expired answers req as an API server answers a watch from a resource
// version it no longer has: 410 Expired, after which an informer relists.
func expired(req *http.Request) *http.Response {
	const status = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
		`"message":"too old resource version","reason":"Expired","code":410}`
	return &http.Response{
		Status: "410 Gone", StatusCode: http.StatusGone, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Body:    io.NopCloser(strings.NewReader(status)),
		Request: req,
	}
}

// endAfter returns a body that ends cleanly (io.EOF) after d.
func endAfter(body io.ReadCloser, d time.Duration) io.ReadCloser {
	end := make(chan struct{})
	timer := time.AfterFunc(d, func() { close(end) })
	b := endWhen(body, end)
	return pipeBody{b.PipeReader, func() {
		timer.Stop()
		b.stop()
	}}
}

// endWhen returns a body that ends cleanly (io.EOF) once end is closed.
func endWhen(body io.ReadCloser, end <-chan struct{}) pipeBody {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, body)
		pw.CloseWithError(err)
	}()
	done := make(chan struct{})
	go func() {
		select {
		case <-end:
			pw.Close()
			body.Close()
		case <-done:
		}
	}()
	var once sync.Once
	return pipeBody{pr, func() {
		once.Do(func() { close(done) })
		body.Close()
	}}
}

type pipeBody struct {
	*io.PipeReader
	stop func()
}

func (b pipeBody) Close() error {
	b.stop()
	return b.PipeReader.Close()
}
