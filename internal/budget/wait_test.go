package budget

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	testingclock "k8s.io/utils/clock/testing"
)

func (b *Budget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.s.waiting()
}

// A request whose context ends while it waits returns the context's cause,
// is counted as canceled, and leaves no waiter behind; a lease renewal
// and a health check's request go at once meanwhile, and are counted.
func TestWaitEndsWithItsContext(t *testing.T) {
	b, err := New(Options{QPS: 0.001, Burst: 1, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(t.Context(), LaneReconcile, "a"); err != nil {
		t.Fatalf("the burst's request: %v", err)
	}
	stop := errors.New("the reconcile was canceled")
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error)
	go func() { done <- b.Wait(ctx, LaneReconcile, "a") }()
	for b.waiting() == 0 {
		runtime.Gosched() // until the request waits; no timing assumed
	}
	if err := b.Wait(context.Background(), LaneLease, ""); err != nil {
		t.Errorf("a lease renewal while a request waited: %v", err)
	}
	if err := b.Wait(context.Background(), LaneHealth, ""); err != nil {
		t.Errorf("a health check's request while a request waited: %v", err)
	}
	cancel(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Errorf("Wait = %v, want the context's cause", err)
	}
	if n := b.waiting(); n != 0 {
		t.Errorf("%d requests still wait", n)
	}
	if got := testutil.ToFloat64(b.metrics().canceledVec.WithLabelValues("reconcile", "a")); got != 1 {
		t.Errorf("canceled{reconcile,a} = %v, want 1", got)
	}
	for _, lane := range []string{"lease", "health"} {
		if got := testutil.ToFloat64(b.metrics().tokens.WithLabelValues(lane, "")); got != 1 {
			t.Errorf("tokens{%s} = %v, want 1", lane, got)
		}
	}
}

// A 429 through the Transport halves the budget's rate and reports what
// the server said (one of priority and fairness, which names its priority
// level, narrows the window of requests in flight instead: see
// TestTransportTellsConcurrencyFromRate); a 503 with a Retry-After is
// counted under a reason of its own.
func TestTransportAdaptsToA429(t *testing.T) {
	status := http.StatusTooManyRequests
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(status)
	}))
	defer srv.Close()
	var seen []Pushback
	reg := prometheus.NewRegistry()
	clk := testingclock.NewFakeClock(t0)
	b, err := New(Options{QPS: 100, Registerer: reg, Clock: clk,
		OnPushback: func(p Pushback) { seen = append(seen, p) }})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: b.Transport(srv.Client().Transport)}
	defer hc.CloseIdleConnections()
	ctx := WithController(t.Context(), "mirror")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/namespaces/a/configmaps", nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if r := b.Rate(); r != 50 {
		t.Errorf("rate after a 429: %v, want 50", r)
	}
	want := Pushback{Reason: ReasonTooManyRequests, Lane: LaneReconcile, Controller: "mirror", Status: 429, RetryAfter: "1", Rate: 50, Concurrency: initialWindow}
	if len(seen) != 1 || seen[0] != want {
		t.Errorf("pushbacks reported: %+v, want one: %+v", seen, want)
	}
	status = http.StatusServiceUnavailable
	clk.Step(time.Second) // the bucket the 429 emptied refills
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	for reason, want := range map[string]float64{"429": 1, "retry_after": 1} {
		if got := testutil.ToFloat64(b.metrics().pushbackVec.WithLabelValues("reconcile", "mirror", reason)); got != want {
			t.Errorf("pushbacks{reconcile,mirror,%s} = %v, want %v", reason, got, want)
		}
	}
	if got, err := testutil.GatherAndCount(reg, "opkit_api_budget_rate", "opkit_api_budget_configured_rate", "opkit_api_budget_concurrency_limit"); err != nil || got != 3 {
		t.Errorf("rate gauges gathered: %d, %v", got, err)
	}
}

// With no fixed rate (the default), GETs through the Transport to a server
// that answers at once leave the rate unlimited; once the server takes two
// seconds over each, the rate falls to a finite one, for latency. Time is
// fake: the handler waits on the budget's clock, which the test moves on
// a tenth of a second at a time, two requests sent at each step.
func TestTransportAdaptsToLatency(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	var latency atomic.Int64 // of the handler, in fake time
	registered := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := time.Duration(latency.Load()); d > 0 {
			at := clk.After(d)
			registered <- struct{}{}
			<-at
		} else {
			registered <- struct{}{}
		}
	}))
	defer srv.Close()
	var seen []Pushback
	reg := prometheus.NewRegistry()
	b, err := New(Options{Registerer: reg, Clock: clk, OnPushback: func(p Pushback) { seen = append(seen, p) }})
	if err != nil {
		t.Fatal(err)
	}
	// Dozens of slow requests run at once here; the window of requests in
	// flight, which slow-starts from a few, is another test's.
	b.win.lift()
	hc := &http.Client{Transport: b.Transport(srv.Client().Transport)}
	defer hc.CloseIdleConnections()
	defer clk.Step(time.Hour) // the handlers still waiting return, for srv.Close
	// inFlight are the requests sent and not yet answered, with when each
	// is due, in the order sent.
	type request struct {
		due  time.Time
		done chan error
	}
	var inFlight []request
	send := func(n int) {
		for range n {
			done := make(chan error, 1)
			go func() {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api/v1/namespaces/a/configmaps/b", nil)
				resp, err := hc.Do(req)
				if err == nil {
					_ = resp.Body.Close()
				}
				done <- err
			}()
			<-registered
			inFlight = append(inFlight, request{due: clk.Now().Add(time.Duration(latency.Load())), done: done})
		}
	}
	// step moves time on by a tenth of a second and waits for the answers
	// due by then, so that each is heard at the time it is due.
	step := func() {
		clk.Step(100 * time.Millisecond)
		for len(inFlight) > 0 && !inFlight[0].due.After(clk.Now()) {
			if err := <-inFlight[0].done; err != nil {
				t.Fatal(err)
			}
			inFlight = inFlight[1:]
		}
	}
	for range 110 { // 11 seconds: a baseline
		send(2)
		step()
	}
	if r := b.Rate(); !math.IsInf(r, 1) {
		t.Fatalf("rate with the server answering at once: %v, want +Inf (unlimited)", r)
	}
	latency.Store(int64(2 * time.Second))
	for i := 0; math.IsInf(b.Rate(), 1); i++ {
		if i == 100 {
			t.Fatal("ten seconds of GETs answered after 2s did not lower the rate")
		}
		send(2)
		step()
	}
	for len(inFlight) > 0 {
		step()
	}
	if len(seen) != 1 || seen[0].Reason != ReasonLatency || seen[0].Latency != 2*time.Second {
		t.Errorf("pushbacks reported: %+v, want one, for latency, of 2s", seen)
	}
	if got := testutil.ToFloat64(b.metrics().pushbackVec.WithLabelValues("reconcile", Unattributed, "latency")); got != 1 {
		t.Errorf("pushbacks{reconcile,unattributed,latency} = %v, want 1", got)
	}
	t.Logf("rate after latency rose from none to 2s: %.1f a second", b.Rate())
}

// Beside a flood waiting for the bucket, a controller within its share
// is let go at once, on the token the flood would have had next: Wait
// returns without waiting and observes no wait.
func TestQuietControllerGoesAtOnceBesideAFlood(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	b, err := New(Options{QPS: 10, Burst: 1, Registerer: prometheus.NewRegistry(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(t.Context(), LaneReconcile, "flood"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 3)
	for range 3 {
		go func() { done <- b.Wait(t.Context(), LaneReconcile, "flood") }()
	}
	for b.waiting() < 3 {
		runtime.Gosched()
	}
	// Should the quiet request queue, its context ends: no timing assumed.
	ctx, cancel := context.WithCancel(t.Context())
	quiet := make(chan error)
	go func() { quiet <- b.Wait(ctx, LaneReconcile, "quiet") }()
wait:
	for {
		select {
		case err = <-quiet:
			break wait
		default:
			if b.waiting() > 3 {
				cancel()
			}
			runtime.Gosched()
		}
	}
	cancel()
	if err != nil {
		t.Fatalf("the quiet controller's request waited behind the flood: %v", err)
	}
	var m dto.Metric
	if err := b.metrics().wait.WithLabelValues("reconcile", "quiet").(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetHistogram().GetSampleCount(); n != 0 {
		t.Errorf("the quiet controller's request waited (%d waits observed)", n)
	}
	if n := b.waiting(); n != 3 {
		t.Errorf("%d of the flood's requests wait, want 3: the quiet one took none of their tokens yet", n)
	}
	for served := 0; served < 3; { // the flood is served in fake time
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
			served++
		default:
			clk.Step(10 * time.Millisecond)
			runtime.Gosched()
		}
	}
}
