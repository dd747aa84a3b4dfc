package budget

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	testingclock "k8s.io/utils/clock/testing"
)

func (b *Budget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.s.waiting()
}

// A request whose context ends while it waits returns the context's cause,
// is counted as canceled, and leaves no waiter behind; a lease renewal
// goes at once meanwhile.
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
	cancel(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Errorf("Wait = %v, want the context's cause", err)
	}
	if n := b.waiting(); n != 0 {
		t.Errorf("%d requests still wait", n)
	}
	if got := testutil.ToFloat64(b.metrics.canceledVec.WithLabelValues("reconcile", "a")); got != 1 {
		t.Errorf("canceled{reconcile,a} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(b.metrics.tokens.WithLabelValues("lease", "")); got != 1 {
		t.Errorf("tokens{lease} = %v, want 1", got)
	}
}

// A 429 through the Transport halves the budget's rate and reports what
// the server said. (One of priority and fairness, which names its priority
// level, narrows the window of requests in flight instead: see
// TestTransportTellsConcurrencyFromRate.)
func TestTransportAdaptsToA429(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	var seen []Pushback
	reg := prometheus.NewRegistry()
	b, err := New(Options{QPS: 100, Registerer: reg, Clock: testingclock.NewFakeClock(t0),
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
	want := Pushback{Lane: LaneReconcile, Controller: "mirror", Status: 429, RetryAfter: "1", Rate: 50, Concurrency: initialWindow}
	if len(seen) != 1 || seen[0] != want {
		t.Errorf("pushbacks reported: %+v, want one: %+v", seen, want)
	}
	if got := testutil.ToFloat64(b.metrics.pushbackVec.WithLabelValues("reconcile", "mirror")); got != 1 {
		t.Errorf("pushbacks{reconcile,mirror} = %v, want 1", got)
	}
	if got, err := testutil.GatherAndCount(reg, "opkit_api_budget_rate", "opkit_api_budget_configured_rate", "opkit_api_budget_concurrency_limit"); err != nil || got != 3 {
		t.Errorf("rate gauges gathered: %d, %v", got, err)
	}
}
