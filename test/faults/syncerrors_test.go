package faults

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
)

// forbiddenStatus is what the API server answers a request RBAC refuses.
const forbiddenStatus = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
	`"message":"configmaps is forbidden: User \"test\" cannot list resource \"configmaps\"","reason":"Forbidden","code":403}`

// answerer answers the lists and watches of ConfigMaps itself while on,
// with status and body, instead of passing them to the API server.
type answerer struct {
	on       atomic.Bool
	status   int
	body     string
	answered atomic.Int64
}

func (a *answerer) wrap(cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if !a.on.Load() || req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/configmaps") {
				return rt.RoundTrip(req)
			}
			a.answered.Add(1)
			return &http.Response{
				Status: http.StatusText(a.status), StatusCode: a.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header:  http.Header{"Content-Type": []string{"application/json"}},
				Body:    io.NopCloser(strings.NewReader(a.body)),
				Request: req,
			}, nil
		})
	})
	return cfg
}

// syncErrors returns the operator's ConfigMap sync errors of class.
func (op *operator) syncErrors(t *testing.T, class string) float64 {
	return op.counter(t, imetrics.CacheSyncErrors, map[string]string{"type": "v1/ConfigMap", "class": class})
}

// Each fault increments opkit_cache_sync_errors_total of its class, and
// only that class: a 403 is forbidden, not list_failed or watch_failed.
func TestSyncErrorClasses(t *testing.T) {
	t.Run("forbidden", func(t *testing.T) {
		a := &answerer{status: http.StatusForbidden, body: forbiddenStatus}
		a.on.Store(true)
		op := startOperator(t, opOptions{config: a.wrap(env.Config())})
		eventually(t, 60*time.Second, "a forbidden sync error", func() error { return atLeastOne(op.syncErrors(t, imetrics.SyncErrorForbidden)) })
		a.on.Store(false)
		onlyClass(t, op, imetrics.SyncErrorForbidden)
	})
	t.Run("decode", func(t *testing.T) {
		a := &answerer{status: http.StatusOK, body: `{"kind":"ConfigMapList","items":[{`}
		a.on.Store(true)
		op := startOperator(t, opOptions{config: a.wrap(env.Config())})
		eventually(t, 60*time.Second, "a decode sync error", func() error { return atLeastOne(op.syncErrors(t, imetrics.SyncErrorDecode)) })
		a.on.Store(false)
		onlyClass(t, op, imetrics.SyncErrorDecode)
	})
	t.Run("expired", func(t *testing.T) {
		exp := &expirer{}
		op := startOperator(t, opOptions{config: exp.wrap(env.Config())})
		waitWatching(t, op)
		exp.expiring.Store(true)
		// Every watch ends as at its timeout and resumes from its resource
		// version: 410. (Cutting the connections instead made the informers
		// list again at times, with no resume to answer: flaky under load.)
		if exp.endWatches() == 0 {
			t.Fatal("no watch open to end")
		}
		eventually(t, 60*time.Second, "an expired sync error", func() error { return atLeastOne(op.syncErrors(t, imetrics.SyncErrorExpired)) })
		exp.expiring.Store(false)
		onlyClass(t, op, imetrics.SyncErrorExpired)
	})
	t.Run("cut", func(t *testing.T) {
		p := startProxy(t)
		watches := &openWatches{}
		op := startOperator(t, opOptions{config: watches.wrap(p.config())})
		waitWatching(t, op)
		// Every connection is cut while a ConfigMap watch stream is open on
		// one, so that the cut breaks the stream midway. A cut that finds
		// only requests in flight breaks no stream: client-go's REST client
		// retries a watch that fails to open with an EOF a second later,
		// and returns no error (the proxy never sees the retry's connection
		// cut). So the cut waits for an open stream, and is made again if
		// nothing counted within a few seconds; each cut is logged.
		var cuts []string
		var last time.Time
		eventually(t, 60*time.Second, "a connection sync error", func() error {
			if atLeastOne(op.syncErrors(t, imetrics.SyncErrorConnection)) == nil {
				return nil
			}
			if open := watches.open.Load(); open > 0 && time.Since(last) > 5*time.Second {
				last = time.Now()
				cut := fmt.Sprintf("%d ConfigMap watch streams open: %d connections cut", open, p.closeAll(1))
				t.Log(cut)
				cuts = append(cuts, cut)
			}
			return fmt.Errorf("none counted yet; cuts: %q; %s", cuts, syncState(t, op))
		})
		onlyClass(t, op, imetrics.SyncErrorConnection)
	})
	t.Run("refused", func(t *testing.T) {
		// The API server's port refuses connections while on, as when it
		// restarts. (The proxy's blackout is not used: client-go's REST
		// client retries a reset connection for a long while before the
		// informer sees the error.)
		var refusing atomic.Bool
		cfg := env.Config()
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if refusing.Load() && strings.HasSuffix(req.URL.Path, "/configmaps") {
					return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
				}
				return rt.RoundTrip(req)
			})
		})
		refusing.Store(true)
		op := startOperator(t, opOptions{config: cfg})
		eventually(t, 60*time.Second, "a connection sync error", func() error { return atLeastOne(op.syncErrors(t, imetrics.SyncErrorConnection)) })
		refusing.Store(false)
		onlyClass(t, op, imetrics.SyncErrorConnection)
	})
}

func atLeastOne(v float64) error {
	if v < 1 {
		return errNone
	}
	return nil
}

var errNone = errors.New("none counted yet")

// waitWatching waits until the operator's ConfigMap watch has delivered an
// event. A watch cut before it delivered anything, within its first
// second, is a "very short watch" to client-go, which then lists again
// (a streaming list, which the faults here let pass) instead of resuming
// the watch.
func waitWatching(t *testing.T, op *operator) {
	t.Helper()
	if err := op.mgr.Cache().WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	w.configMap(w.home, "watched", map[string]string{"v": "1"})
	lister, err := cache.Register[*corev1.ConfigMap](op.mgr.Cache(), cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the ConfigMap cached", func() error {
		_, err := lister.Get(w.home, "watched")
		return err
	})
}

// openWatches counts the ConfigMap watch streams open: answered, and not
// yet ended, failed or closed.
type openWatches struct{ open atomic.Int64 }

func (o *openWatches) wrap(cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err != nil || resp.StatusCode != http.StatusOK || req.URL.Query().Get("watch") != "true" ||
				!strings.HasSuffix(req.URL.Path, "/configmaps") {
				return resp, err
			}
			o.open.Add(1)
			resp.Body = &streamBody{ReadCloser: resp.Body, ended: func() { o.open.Add(-1) }}
			return resp, nil
		})
	})
	return cfg
}

// streamBody calls ended once, at its first read error or Close.
type streamBody struct {
	io.ReadCloser
	once  sync.Once
	ended func()
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.ended)
	}
	return n, err
}

func (b *streamBody) Close() error {
	b.once.Do(b.ended)
	return b.ReadCloser.Close()
}

// syncState describes the operator's ConfigMap sync errors by class and
// the status of its ConfigMap registrations, for a timeout's message.
func syncState(t *testing.T, op *operator) string {
	t.Helper()
	var counts []string
	for _, c := range syncErrorClasses {
		counts = append(counts, fmt.Sprintf("%s=%v", c, op.syncErrors(t, c)))
	}
	var regs []string
	for _, st := range op.mgr.Cache().Status() {
		if st.GVK.Kind != "ConfigMap" {
			continue
		}
		unwatched := "watching"
		if !st.Unwatched.IsZero() {
			unwatched = "unwatched since " + st.Unwatched.Format(time.StampMilli)
		}
		regs = append(regs, fmt.Sprintf("{%s %q synced=%v %s err=%v}", st.Form, st.Selector, st.Synced, unwatched, st.Err))
	}
	return fmt.Sprintf("ConfigMap sync errors by class: %s; ConfigMap registrations: %s", strings.Join(counts, " "), strings.Join(regs, " "))
}

var syncErrorClasses = []string{imetrics.SyncErrorForbidden, imetrics.SyncErrorExpired, imetrics.SyncErrorDecode,
	imetrics.SyncErrorConnection, imetrics.SyncErrorList, imetrics.SyncErrorWatch}

// onlyClass checks that no class of ConfigMap sync errors but those given
// counted.
func onlyClass(t *testing.T, op *operator, classes ...string) {
	t.Helper()
	for _, c := range syncErrorClasses {
		if v := op.syncErrors(t, c); !slices.Contains(classes, c) && v != 0 {
			t.Errorf("%s{type=v1/ConfigMap,class=%s} = %v; the faults injected were %v", imetrics.CacheSyncErrors, c, v, classes)
		}
	}
}
