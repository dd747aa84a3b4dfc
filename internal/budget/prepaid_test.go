package budget

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	testingclock "k8s.io/utils/clock/testing"
)

// newFakeBudget returns a budget of qps with a burst of 1 on a fake
// clock, its bucket empty.
func newFakeBudget(t *testing.T, qps float64) (*Budget, *testingclock.FakeClock) {
	t.Helper()
	c := testingclock.NewFakeClock(t0)
	b, err := New(Options{QPS: qps, Burst: 1, Registerer: prometheus.NewRegistry(), Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(t.Context(), LaneReconcile, "other"); err != nil {
		t.Fatal(err)
	}
	return b, c
}

// reconcileRequest sends a GET through b's Transport to srv as a
// reconcile of controller whose worker holds p.
func reconcileRequest(ctx context.Context, b *Budget, srv *httptest.Server, controller string, p *Prepaid) error {
	ctx = context.WithValue(WithController(ctx, controller), PrepaidKey{}, p)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/namespaces/a/configmaps/b", nil)
	resp, err := (&http.Client{Transport: b.Transport(srv.Client().Transport)}).Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	return err
}

// waits returns how many waits the reconcile lane's controller observed.
func waits(t *testing.T, b *Budget, controller string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := b.metrics().wait.WithLabelValues("reconcile", controller).(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// waitUntil yields until cond holds; no timing assumed.
func waitUntil(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}

// A worker's pre-paid token waits its turn like a request, and the first
// request of the reconcile goes on it, at once; the second waits for a
// token of its own. A request of another controller does not spend it.
func TestPrepaidTokenGoesToTheFirstRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	b, c := newFakeBudget(t, 1)
	p := b.Prepay("mirror")
	acquired := make(chan error)
	go func() { acquired <- p.Acquire(t.Context()) }()
	waitUntil(func() bool { return b.waiting() == 1 })
	c.Step(time.Second)
	if err := <-acquired; err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if got := testutil.ToFloat64(b.metrics().tokens.WithLabelValues("reconcile", "mirror")); got != 0 {
		t.Errorf("tokens{reconcile,mirror} = %v before any request, want 0: a token counts when spent", got)
	}
	if got := waits(t, b, "mirror"); got != 1 {
		t.Errorf("%d waits observed for reconcile/mirror, want 1: the worker's", got)
	}

	// Another controller's request does not spend it: it waits.
	otherCtx, cancel := context.WithCancel(t.Context())
	other := make(chan error)
	go func() { other <- reconcileRequest(otherCtx, b, srv, "billing", p) }()
	waitUntil(func() bool { return b.waiting() == 1 })
	cancel()
	if err := <-other; !errors.Is(err, context.Canceled) {
		t.Fatalf("another controller's request: %v, want it canceled while it waited", err)
	}

	if err := reconcileRequest(t.Context(), b, srv, "mirror", p); err != nil {
		t.Fatalf("the first request, with the bucket empty: %v", err)
	}
	if got := testutil.ToFloat64(b.metrics().tokens.WithLabelValues("reconcile", "mirror")); got != 1 {
		t.Errorf("tokens{reconcile,mirror} = %v after the first request, want 1", got)
	}
	second := make(chan error)
	go func() { second <- reconcileRequest(t.Context(), b, srv, "mirror", p) }()
	waitUntil(func() bool { return b.waiting() == 1 })
	c.Step(time.Second)
	if err := <-second; err != nil {
		t.Fatalf("the second request: %v", err)
	}
	p.Release()
	if b.s.tokens != 0 {
		t.Errorf("tokens after Release of a spent token: %v, want 0", b.s.tokens)
	}
}

// A token pre-paid for a reconcile that sent nothing goes back to the
// bucket, for the next request, and out of the rate measured.
func TestPrepaidTokenUnusedGoesBack(t *testing.T) {
	b, c := newFakeBudget(t, 1)
	c.Step(time.Second)
	p := b.Prepay("mirror")
	if err := p.Acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := p.Acquire(t.Context()); err != nil {
		t.Fatalf("Acquire holding a token: %v", err)
	}
	b.mu.Lock()
	tokens, window := b.s.tokens, b.s.window
	b.mu.Unlock()
	p.Release()
	p.Release() // holds none now: a no-op
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.s.tokens != tokens+1 || b.s.window != window-1 {
		t.Errorf("Release of an unspent token: tokens %v, window %v; want %v and %v", b.s.tokens, b.s.window, tokens+1, window-1)
	}
	if !b.s.take(c.Now()) {
		t.Error("the token given back was not free for the next request")
	}
}

// A worker whose context ends while it waits for its token takes
// nothing: the token that comes next goes to the next request.
func TestPrepaidCanceledWaitTakesNothing(t *testing.T) {
	b, c := newFakeBudget(t, 1)
	p := b.Prepay("mirror")
	stop := errors.New("the controller stopped")
	ctx, cancel := context.WithCancelCause(t.Context())
	acquired := make(chan error)
	go func() { acquired <- p.Acquire(ctx) }()
	waitUntil(func() bool { return b.waiting() == 1 })
	cancel(stop)
	if err := <-acquired; !errors.Is(err, stop) {
		t.Fatalf("Acquire = %v, want the context's cause", err)
	}
	if p.held.Load() || b.waiting() != 0 {
		t.Fatalf("after the canceled wait: held %v, %d waiting; want neither", p.held.Load(), b.waiting())
	}
	if got := testutil.ToFloat64(b.metrics().canceledVec.WithLabelValues("reconcile", "mirror")); got != 1 {
		t.Errorf("canceled{reconcile,mirror} = %v, want 1", got)
	}
	c.Step(time.Second)
	done, end := context.WithCancel(t.Context())
	end() // a request that may not wait: it goes only on a free token
	if err := b.Wait(done, LaneReconcile, "other"); err != nil {
		t.Errorf("the next token was not free: %v", err)
	}
}

// Limited says whether a rate applies: not without a fixed rate until the
// server pushes back.
func TestLimited(t *testing.T) {
	b, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Limited() {
		t.Error("limited without a fixed rate")
	}
	b.PushedBack(Pushback{Lane: LaneReconcile, Status: http.StatusTooManyRequests})
	if !b.Limited() {
		t.Error("not limited after a pushback")
	}
	if b, _ := newFakeBudget(t, 1); !b.Limited() {
		t.Error("not limited with a fixed rate")
	}
}

// Once priority and fairness's 429s have narrowed the window of requests
// in flight, a worker waits for room before it takes a key, not its
// request after: Limited says so, Acquire holds the room, the
// reconcile's first request goes in it without waiting, and the room is
// freed once its answer is read, or by Release if no request spent it.
func TestWorkerWaitsForRoomInANarrowedWindow(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	b, err := New(Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if b.Limited() {
		t.Fatal("a budget of no fixed rate is limited before any pushback")
	}
	b.PushedBack(Pushback{Reason: ReasonTooManyRequests, Status: 429, PriorityLevel: "uid"})
	if got := b.Concurrency(); got != 1 {
		t.Fatalf("the window after a 429 with nothing in flight: %v, want 1", got)
	}
	if !b.Limited() {
		t.Fatal("a narrowed window does not make the budget Limited: workers would take keys and wait in the HTTP client")
	}
	p, other := b.Prepay("c"), b.Prepay("c")
	if err := p.Acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The window is full: the other worker waits, holding no key.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- other.Acquire(ctx) }()
	waitUntil(func() bool { b.win.mu.Lock(); defer b.win.mu.Unlock(); return len(b.win.reservers) == 1 })
	// The first worker's request goes in its room at once.
	if err := reconcileRequest(t.Context(), b, srv, "c", p); err != nil {
		t.Fatalf("the reconcile's first request: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the other worker, once the answer freed the room: %v", err)
	}
	cancel()
	// A reconcile that sends nothing gives its room back.
	waiting := make(chan error)
	go func() { waiting <- p.Acquire(t.Context()) }()
	waitUntil(func() bool { b.win.mu.Lock(); defer b.win.mu.Unlock(); return len(b.win.reservers) == 1 })
	other.Release()
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	p.Release()
	b.win.mu.Lock()
	defer b.win.mu.Unlock()
	if b.win.inFlight != 0 || b.win.reserved != 0 {
		t.Errorf("%d requests in flight and %d rooms reserved after every room was spent or released", b.win.inFlight, b.win.reserved)
	}
}

// A worker's room is held for its reconcile's first request, which may
// come late or never (the reconcile waits at a fence for the lease's
// renewal, or for an informer's list to sync): no request waits for it.
// A lease renewal, a health check and a list go while every room of a
// narrowed window is held by workers; only other workers wait.
func TestHeldRoomHoldsUpNoRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	b, err := New(Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	b.PushedBack(Pushback{Reason: ReasonTooManyRequests, Status: 429, PriorityLevel: "uid"})
	p := b.Prepay("c")
	if err := p.Acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	send := func(ctx context.Context, rt http.RoundTripper) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/namespaces/a/configmaps", nil)
		resp, err := (&http.Client{Transport: rt}).Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	for name, rt := range map[string]http.RoundTripper{
		"lease renewal":      b.LeaseTransport(srv.Client().Transport),
		"health check":       DefaultLane(b.Transport(srv.Client().Transport), LaneHealth),
		"informer's list":    DefaultLane(b.Transport(srv.Client().Transport), LaneInformer),
		"unattributed write": b.Transport(srv.Client().Transport),
	} {
		// Should the request wait, its context ends: no timing assumed.
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- send(ctx, rt) }()
	wait:
		for {
			select {
			case err = <-done:
				break wait
			default:
				b.win.mu.Lock()
				waiting := len(b.win.waiters)
				b.win.mu.Unlock()
				if waiting > 0 {
					cancel()
				}
				runtime.Gosched()
			}
		}
		cancel()
		if err != nil {
			t.Errorf("a %s waited for the room a worker holds: %v", name, err)
		}
	}
	// Another worker waits for room, and the held room's request goes.
	other := b.Prepay("c")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- other.Acquire(ctx) }()
	if err := reconcileRequest(t.Context(), b, srv, "c", p); err != nil {
		t.Fatalf("the held room's request: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the other worker once the room was spent: %v", err)
	}
	cancel()
	other.Release()
	p.Release()
}
