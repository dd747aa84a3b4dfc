package budget

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fill lets n requests into w and returns their releases.
func fill(t *testing.T, w *window, now time.Time, n int) []func() {
	t.Helper()
	var out []func()
	for range n {
		r, _, err := w.acquire(context.Background(), func() time.Time { return now }, false, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// lift takes the window's limit away, as slow start ends.
func (w *window) lift() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.limit, w.slowStart = math.Inf(1), false
}

func (w *window) waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.waiters)
}

// The window starts narrow, widens with each answer while it is full
// (slow start), not while requests are few, and lifts at liftWindow.
func TestWindowSlowStarts(t *testing.T) {
	w := newWindow()
	if w.Limit() != initialWindow {
		t.Fatalf("limit at first %v, want %d", w.Limit(), initialWindow)
	}
	now := time.Now()
	one := fill(t, w, now, 1)
	w.answered()
	one[0]()
	if w.Limit() != initialWindow {
		t.Errorf("an answer while the window was not full widened it to %v", w.Limit())
	}
	for w.Limit() < liftWindow && !math.IsInf(w.Limit(), 1) {
		before := w.Limit()
		releases := fill(t, w, now, int(before))
		for _, r := range releases {
			w.answered()
			r()
		}
		if w.Limit() <= before {
			t.Fatalf("a full window's answers left it at %v", w.Limit())
		}
	}
	if !math.IsInf(w.Limit(), 1) {
		t.Errorf("limit %v after slow start, want none", w.Limit())
	}
}

// A pushback halves the requests in flight; the pushbacks of requests let
// in before it do not narrow it again. Then the window widens by one each
// probe interval, and a probe that draws a pushback doubles the interval.
func TestWindowHalvesThenProbes(t *testing.T) {
	w := newWindow()
	now := time.Now()
	w.lift()
	releases := fill(t, w, now, 30)
	if !w.pushedBack(now, 0) {
		t.Fatal("the first pushback changed nothing")
	}
	if w.Limit() != 15 {
		t.Fatalf("limit %v after a pushback with 30 in flight, want 15", w.Limit())
	}
	if w.pushedBack(now, 0) || w.Limit() != 15 {
		t.Errorf("a pushback of a request let in before the narrowing narrowed it again to %v", w.Limit())
	}
	for _, r := range releases {
		r()
	}
	clock := func() time.Time { return now }
	adapt := func() { r, _, _ := w.acquire(context.Background(), clock, false, false); r() }

	now = now.Add(minProbe)
	adapt()
	if w.Limit() != 16 {
		t.Fatalf("limit %v a probe interval later, want 16", w.Limit())
	}
	// The probe draws a pushback at once: the next one waits twice as long.
	releases = fill(t, w, now, 16)
	if !w.pushedBack(now, 1) || w.Limit() != 8 {
		t.Fatalf("limit %v after the probe's pushback, want 8", w.Limit())
	}
	for _, r := range releases {
		r()
	}
	now = now.Add(minProbe)
	adapt()
	if w.Limit() != 8 {
		t.Errorf("widened to %v a probe interval after a failed probe, want the interval doubled", w.Limit())
	}
	now = now.Add(minProbe)
	adapt()
	if w.Limit() != 9 {
		t.Errorf("limit %v two intervals after a failed probe, want 9", w.Limit())
	}
}

// A request that finds the window full waits; one whose context ends
// while it waits takes nothing; an urgent one (a lease renewal) goes ahead
// of those waiting.
func TestWindowWaitsInOrderAndCancels(t *testing.T) {
	w := newWindow()
	now := time.Now()
	clock := func() time.Time { return now }
	releases := fill(t, w, now, initialWindow)
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stopped")
	canceled := make(chan error)
	go func() { _, _, err := w.acquire(ctx, clock, false, false); canceled <- err }()
	for w.waiting() < 1 {
		runtime.Gosched()
	}
	order := make(chan string, 2)
	// The two release after they report their turn: the check of what
	// is left at the end waits for both.
	var wg sync.WaitGroup
	wg.Go(func() {
		r, _, _ := w.acquire(context.Background(), clock, false, false)
		order <- "reconcile"
		r()
	})
	for w.waiting() < 2 {
		runtime.Gosched()
	}
	wg.Go(func() {
		r, _, _ := w.acquire(context.Background(), clock, true, false)
		order <- "lease"
		r()
	})
	for w.waiting() < 3 {
		runtime.Gosched()
	}
	cancel(stop)
	if err := <-canceled; !errors.Is(err, stop) {
		t.Errorf("canceled wait: %v, want its cause", err)
	}
	releases[0]()
	if first := <-order; first != "lease" {
		t.Errorf("%s went first, want the lease renewal", first)
	}
	if second := <-order; second != "reconcile" {
		t.Errorf("then %s", second)
	}
	for _, r := range releases[1:] {
		r()
	}
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inFlight != 0 || len(w.waiters) != 0 {
		t.Errorf("%d in flight and %d waiting after all ended", w.inFlight, len(w.waiters))
	}
}

// Through the Transport: priority and fairness's 429 (it names the
// priority level) narrows the window and leaves the rate alone; a 429
// without the header (another limiter's) lowers the rate and leaves the
// window.
func TestTransportTellsConcurrencyFromRate(t *testing.T) {
	for _, tt := range []struct {
		name            string
		priorityLevel   string
		wantRateLimited bool
	}{
		{name: "priority and fairness", priorityLevel: "0b5a6f9e"},
		{name: "another limiter", wantRateLimited: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.priorityLevel != "" {
					w.Header().Set("X-Kubernetes-PF-PriorityLevel-UID", tt.priorityLevel)
				}
				w.WriteHeader(http.StatusTooManyRequests)
			}))
			defer srv.Close()
			b, err := New(Options{Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			c := &http.Client{Transport: b.Transport(http.DefaultTransport)}
			for range 3 {
				resp, err := c.Get(srv.URL + "/api/v1/namespaces/a/configmaps/b")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			rateLimited, windowed := !math.IsInf(b.Rate(), 1), b.Concurrency() < initialWindow
			if rateLimited != tt.wantRateLimited || windowed == tt.wantRateLimited {
				t.Errorf("rate %v, window %v: want the %s", b.Rate(), b.Concurrency(),
					map[bool]string{true: "rate lowered, the window left", false: "window narrowed, the rate left"}[tt.wantRateLimited])
			}
			b.win.mu.Lock()
			defer b.win.mu.Unlock()
			if b.win.inFlight != 0 {
				t.Errorf("%d requests still in flight once their bodies were closed", b.win.inFlight)
			}
		})
	}
}

// A lease renewal or a health check that priority and fairness turned
// away (a 429 naming its priority level) is sent again at once, not after
// the Retry-After that client-go would sleep, its body intact; a
// reconcile's 429 goes back to its caller, as does another limiter's.
func TestUrgentRequestsRetryPriorityLevelRejections(t *testing.T) {
	var calls atomic.Int32
	var bodies []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		if calls.Add(1)%3 != 0 { // two rejections, then an answer
			w.Header().Set("X-Kubernetes-PF-PriorityLevel-UID", "uid")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	b, err := New(Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	put := func(rt http.RoundTripper) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/apis/coordination.k8s.io/v1/namespaces/a/leases/l", strings.NewReader("renewal"))
		resp, err := (&http.Client{Transport: rt}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if got := put(b.LeaseTransport(srv.Client().Transport)); got != http.StatusOK {
		t.Errorf("a lease renewal rejected twice by its priority level got %d, want 200 on the third try", got)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the server saw %d requests, want 3", n)
	}
	for i, body := range bodies {
		if body != "renewal" {
			t.Errorf("try %d sent the body %q, want it whole", i+1, body)
		}
	}
	calls.Store(0)
	if got := put(b.Transport(srv.Client().Transport)); got != http.StatusTooManyRequests {
		t.Errorf("a reconcile's write rejected by its priority level got %d, want the 429 back", got)
	}
}
