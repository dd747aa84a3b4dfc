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
// the server said, its priority-and-fairness headers included; a 503 with
// a Retry-After is counted under a reason of its own.
func TestTransportAdaptsToA429(t *testing.T) {
	status := http.StatusTooManyRequests
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Kubernetes-PF-FlowSchema-UID", "fs-1")
		w.Header().Set("X-Kubernetes-PF-PriorityLevel-UID", "pl-1")
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
	want := Pushback{Reason: ReasonTooManyRequests, Lane: LaneReconcile, Controller: "mirror", Status: 429, RetryAfter: "1", FlowSchema: "fs-1", PriorityLevel: "pl-1", Rate: 50}
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
		if got := testutil.ToFloat64(b.metrics.pushbackVec.WithLabelValues("reconcile", "mirror", reason)); got != want {
			t.Errorf("pushbacks{reconcile,mirror,%s} = %v, want %v", reason, got, want)
		}
	}
	if got, err := testutil.GatherAndCount(reg, "opkit_api_budget_rate", "opkit_api_budget_configured_rate"); err != nil || got != 2 {
		t.Errorf("rate gauges gathered: %d, %v", got, err)
	}
}
