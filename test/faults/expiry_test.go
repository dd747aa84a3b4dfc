package faults

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// goneStatus is what the API server answers a watch from a resource
// version etcd has compacted away.
const goneStatus = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
	`"message":"too old resource version: 1 (2)","reason":"Expired","code":410}`

// expirer answers watches that resume from a resource version with 410
// Gone while expiring is set, as the API server does once etcd has
// compacted the version away. Watches that start with the initial events
// (a streaming list) pass.
type expirer struct {
	expiring atomic.Bool
	served   atomic.Int64

	mu sync.Mutex
	// watches are the bodies of the watches open now, for endWatches.
	watches map[*endableBody]struct{}
}

// endWatches ends every watch open now as the API server ends one at its
// timeout: the stream ends cleanly, so each informer resumes from its
// resource version (a cut connection may make it list again instead).
func (e *expirer) endWatches() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for b := range e.watches {
		b.end()
	}
	n := len(e.watches)
	clear(e.watches)
	return n
}

// track keeps the body of a watch until it ends.
func (e *expirer) track(resp *http.Response) {
	b := &endableBody{ReadCloser: resp.Body}
	resp.Body = b
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.watches == nil {
		e.watches = map[*endableBody]struct{}{}
	}
	e.watches[b] = struct{}{}
}

// endableBody is a response body that end makes read as a clean end of
// stream (io.EOF) rather than the error closing it underneath gives.
type endableBody struct {
	io.ReadCloser
	ended atomic.Bool
}

func (b *endableBody) end() {
	b.ended.Store(true)
	b.ReadCloser.Close()
}

func (b *endableBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.ended.Load() {
		return n, io.EOF
	}
	return n, err
}

func (e *expirer) wrap(cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			q := req.URL.Query()
			if !e.expiring.Load() || q.Get("watch") != "true" || q.Get("sendInitialEvents") == "true" || q.Get("resourceVersion") == "" {
				resp, err := rt.RoundTrip(req)
				if err == nil && q.Get("watch") == "true" {
					e.track(resp)
				}
				return resp, err
			}
			e.served.Add(1)
			return &http.Response{
				Status: "410 Gone", StatusCode: http.StatusGone, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header:  http.Header{"Content-Type": []string{"application/json"}},
				Body:    io.NopCloser(strings.NewReader(goneStatus)),
				Request: req,
			}, nil
		})
	})
	return cfg
}

// Watches expire while the sources change: every watch that resumes is
// answered 410 Gone for 3s, and the connections are cut so that every
// informer must resume. The informers relist and the copies converge.
func TestWatchExpiry(t *testing.T) {
	w := newWorld(t)
	nss := w.namespaces(4)
	p := startProxy(t)
	exp := &expirer{}
	op := startOperator(t, opOptions{config: exp.wrap(p.config())})
	const mirrors = 3
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.configMap(w.home, name, map[string]string{"v": "0"})
		w.mirror(name, name, w.selector())
		w.eventually("copies of "+name, w.copiesEqual(nss, name, map[string]string{"v": "0"}))
	}
	relists := op.counter(t, imetrics.CacheRelists, nil)

	exp.expiring.Store(true)
	p.closeAll(1) // every informer's watch ends and must resume
	for i := 1; i <= 6; i++ {
		for j := range mirrors {
			if err := w.setData(w.home, fmt.Sprintf("src-%d", j), map[string]string{"v": fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	exp.expiring.Store(false)
	ended := time.Now()

	want := map[string]string{"v": "6"}
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.eventually("copies of "+name+" after the expiry", w.copiesEqual(nss, name, want))
	}
	after := op.counter(t, imetrics.CacheRelists, nil)
	t.Logf("%d watches answered 410 Gone; relists %v -> %v; converged %v after the expiry ended",
		exp.served.Load(), relists, after, time.Since(ended).Round(time.Millisecond))
	if exp.served.Load() == 0 {
		t.Fatal("no watch was answered 410: the test tested nothing")
	}
	if after <= relists {
		t.Errorf("%s did not rise (%v -> %v) although watches expired", imetrics.CacheRelists, relists, after)
	}
}
