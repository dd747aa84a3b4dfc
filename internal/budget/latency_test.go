package budget

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"
)

const (
	getURL  = "https://api/api/v1/namespaces/a/configmaps/b"
	listURL = "https://api/api/v1/namespaces/a/configmaps"
)

// server is a budget in fake time, with what it reported as pushbacks.
type server struct {
	b    *Budget
	clk  *testingclock.FakeClock
	seen []Pushback
}

func newServer(t *testing.T) *server {
	t.Helper()
	s := &server{clk: testingclock.NewFakeClock(t0)}
	b, err := New(Options{QPS: 100, Burst: 200, Clock: s.clk, OnPushback: func(p Pushback) { s.seen = append(s.seen, p) }})
	if err != nil {
		t.Fatal(err)
	}
	s.b = b
	return s
}

// answer has the budget hear the answers to n requests of method and
// url, each taking d, one every span/n from now on; the clock ends at the
// last answer.
func (s *server) answer(method, url string, n int, d, span time.Duration) {
	for range n {
		s.clk.Step(span / time.Duration(n))
		req := httptest.NewRequest(method, url, nil)
		lane, controller := Classify(req)
		s.b.answered(req, &http.Response{StatusCode: http.StatusOK, Header: http.Header{}}, lane, controller, s.clk.Now().Add(-d), math.MaxInt)
	}
}

// warm gives GETs a baseline of d: eleven seconds of them, so that a
// spell of ten seconds has closed.
func (s *server) warm(d time.Duration) {
	s.answer(http.MethodGet, getURL, 110, d, 11*time.Second)
	for _, k := range s.b.lat.kinds {
		if _, ok := k.baseline(s.clk.Now()); !ok {
			panic("no baseline after warm")
		}
	}
}

// rate is the budget's rate now.
func (s *server) rate() float64 { return s.b.Rate() }

// Most requests answered slowly over a few seconds are a pushback: the
// rate halves, as on a 429, and the report says why and how slow.
func TestRisingLatencyLowersTheRate(t *testing.T) {
	s := newServer(t)
	s.warm(5 * time.Millisecond)
	s.answer(http.MethodGet, getURL, 20, 5*time.Millisecond, time.Second)
	if r := s.rate(); r != 100 {
		t.Fatalf("rate with GETs at their baseline: %v, want 100", r)
	}
	s.answer(http.MethodGet, getURL, 40, 1500*time.Millisecond, 2*time.Second)
	if r := s.rate(); r >= 100 {
		t.Fatalf("rate after two seconds of GETs at 1.5s (their baseline 5ms): %v, want lowered", r)
	}
	if len(s.seen) != 1 || s.seen[0].Reason != ReasonLatency || s.seen[0].Latency != 1500*time.Millisecond ||
		s.seen[0].Lane != LaneReconcile || s.seen[0].Controller != Unattributed || s.seen[0].Rate != 50 {
		t.Errorf("pushbacks reported: %+v, want one, for latency, of 1.5s, to rate 50", s.seen)
	}
}

// What is no signal: one slow request among fast ones; a stall of the
// server that answers all it held at once; a minority of slow requests;
// a trickle of requests, all slow (an operator that sends so few is not
// the server's load); and a kind slow by nature (a create an admission
// webhook takes seconds over) outnumbering fast GETs.
func TestOneSlowMomentIsNoSignal(t *testing.T) {
	const fast, slow = 5 * time.Millisecond, 1500 * time.Millisecond
	create := "https://api/api/v1/namespaces/a/pods"
	for _, c := range []struct {
		name string
		load func(s *server)
	}{
		{"one GET of a minute", func(s *server) {
			s.answer(http.MethodGet, getURL, 1, time.Minute, time.Millisecond)
			s.answer(http.MethodGet, getURL, 40, fast, 2*time.Second)
		}},
		{"a stall answering 30 GETs at once", func(s *server) {
			s.clk.Step(3 * time.Second)
			s.answer(http.MethodGet, getURL, 30, slow, 30*time.Microsecond)
			s.answer(http.MethodGet, getURL, 5, fast, 2*time.Second)
		}},
		{"a third of the GETs slow", func(s *server) {
			for range 100 { // five seconds
				s.answer(http.MethodGet, getURL, 1, slow, 10*time.Millisecond)
				s.answer(http.MethodGet, getURL, 2, fast, 40*time.Millisecond)
			}
		}},
		{"four GETs a second, all slow", func(s *server) {
			s.clk.Step(3 * time.Second)
			s.answer(http.MethodGet, getURL, 20, slow, 5*time.Second)
		}},
		{"creates at their baseline of 3s, outnumbering GETs", func(s *server) {
			s.answer(http.MethodPost, create, 22, 3*time.Second, 11*time.Second)
			for range 30 { // three seconds
				s.answer(http.MethodPost, create, 3, 3*time.Second, 75*time.Millisecond)
				s.answer(http.MethodGet, getURL, 1, fast, 25*time.Millisecond)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t)
			s.warm(fast)
			c.load(s)
			if r := s.rate(); r != 100 || len(s.seen) != 0 {
				t.Errorf("rate %v, pushbacks %+v; want 100 and none", r, s.seen)
			}
		})
	}
}

// Lists and watches are not measured: a list's latency grows with the
// collection, a watch lasts as long as it streams.
func TestSlowListsAndWatchesAreNoSignal(t *testing.T) {
	s := newServer(t)
	s.warm(5 * time.Millisecond)
	legacyWatch := "https://api/api/v1/watch/namespaces/a/configmaps/b"
	for _, url := range []string{listURL, listURL + "?watch=true", legacyWatch, getURL + "/log"} {
		s.answer(http.MethodGet, url, 22, 5*time.Millisecond, 11*time.Second)
	}
	for range 30 { // three seconds
		s.answer(http.MethodGet, listURL, 2, 5*time.Second, 25*time.Millisecond)
		s.answer(http.MethodGet, listURL+"?watch=true&resourceVersion=1", 2, 5*time.Minute, 25*time.Millisecond)
		s.answer(http.MethodGet, legacyWatch, 2, 5*time.Minute, 25*time.Millisecond)
		s.answer(http.MethodGet, getURL+"/log?follow=true", 2, 5*time.Minute, 25*time.Millisecond)
		s.answer(http.MethodGet, getURL, 1, 5*time.Millisecond, 25*time.Millisecond)
	}
	if r := s.rate(); r != 100 {
		t.Errorf("rate with slow lists, watches and logs, and GETs at their baseline: %v, want 100", r)
	}
}

// Latency under the floor is no signal, however many times the baseline:
// a local API server going from 2ms to 200ms is still fast.
func TestLatencyUnderTheFloorIsNoSignal(t *testing.T) {
	s := newServer(t)
	s.warm(2 * time.Millisecond)
	s.answer(http.MethodGet, getURL, 250, 8*time.Millisecond, 5*time.Second)
	s.answer(http.MethodGet, getURL, 250, 200*time.Millisecond, 5*time.Second)
	s.answer(http.MethodGet, getURL, 250, slowFloor, 5*time.Second)
	if r := s.rate(); r != 100 {
		t.Errorf("rate with GETs at 8ms, 200ms, then %v (their baseline 2ms): %v, want 100", slowFloor, r)
	}
}

// After a decrease for latency, the requests sent before it and answered
// slowly after it are no second signal; the rate then grows back
// additively, by 5% of the configured rate a second, as after a 429.
// Requests sent after it and still slow lower it again.
func TestRecoveryAfterLatencyIsAdditive(t *testing.T) {
	s := newServer(t)
	s.warm(5 * time.Millisecond)
	for i := 0; len(s.seen) == 0; i++ {
		if i == 100 {
			t.Fatal("five seconds of GETs at 1.5s (their baseline 5ms) did not lower the rate")
		}
		s.answer(http.MethodGet, getURL, 1, 1500*time.Millisecond, 50*time.Millisecond)
	}
	var rates []string
	note := func() { rates = append(rates, fmt.Sprintf("%.1f", s.rate())) }
	note()
	// In flight at the decrease: sent up to 1.5s before it.
	s.answer(http.MethodGet, getURL, 28, 1500*time.Millisecond, 1400*time.Millisecond)
	note()
	for range 4 {
		s.answer(http.MethodGet, getURL, 20, 5*time.Millisecond, time.Second)
		note()
	}
	if diff := cmp.Diff([]string{"50.0", "57.0", "62.0", "67.0", "72.0", "77.0"}, rates); diff != "" {
		t.Errorf("rates at the decrease, 1.4s later and each second after (-want +got):\n%s", diff)
	}
	s.answer(http.MethodGet, getURL, 60, 1500*time.Millisecond, 3*time.Second)
	if len(s.seen) != 2 || s.seen[1].Rate >= 77 {
		t.Errorf("pushbacks reported: %+v, want a second one once GETs sent after the first were slow", s.seen)
	}
}

// docs/api-budget.md's table of the latency thresholds gives the values
// in force.
func TestDocsStateTheLatencyThresholds(t *testing.T) {
	b, err := os.ReadFile("../../docs/api-budget.md")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| ([a-z ]+) \\| `([^`]+)` \\|").FindAllStringSubmatch(string(b), -1) {
		got[m[1]] = m[2]
	}
	want := map[string]string{
		"absolute floor":                fmt.Sprint(slowFloor),
		"multiple of the baseline":      fmt.Sprint(slowFactor),
		"fast window":                   fmt.Sprint(fastWindow),
		"fewest requests in the window": fmt.Sprint(fastMinSamples),
		"span of the slow answers":      fmt.Sprint(fastMinSpan),
		"baseline spell":                fmt.Sprint(spellLen),
		"baseline span":                 fmt.Sprint(time.Duration(baselineSpan)),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/api-budget.md's thresholds (-in force +documented):\n%s", diff)
	}
}

func TestMeasuredKind(t *testing.T) {
	for _, c := range []struct {
		method, path, kind string
	}{
		{"GET", "/api/v1/namespaces/a/configmaps/b", "get /configmaps/"},
		{"GET", "/apis/apps/v1/namespaces/a/deployments/b/status", "get apps/deployments/status"},
		{"GET", "/api/v1/nodes/n", "get /nodes/"},
		{"GET", "/api/v1/namespaces/a", "get /namespaces/"},
		{"PUT", "/api/v1/namespaces/a/finalize", "update /namespaces/finalize"},
		{"POST", "/api/v1/namespaces/a/configmaps", "create /configmaps/"},
		{"POST", "/api/v1/namespaces/a/pods/p/eviction", "create /pods/eviction"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/a/leases/l", "update coordination.k8s.io/leases/"},
		{"PATCH", "/apis/apps/v1/namespaces/a/deployments/b", "patch apps/deployments/"},
		{"DELETE", "/api/v1/namespaces/a/configmaps/b", "delete /configmaps/"},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "create authorization.k8s.io/subjectaccessreviews/"},
		// Not measured:
		{"GET", "/api/v1/namespaces/a/configmaps", ""},
		{"GET", "/api/v1/configmaps?limit=500", ""},
		{"GET", "/api/v1/namespaces", ""},
		{"DELETE", "/api/v1/namespaces/a/configmaps", ""},
		{"GET", "/api/v1/namespaces/a/configmaps?watch=true", ""},
		{"GET", "/api/v1/namespaces/a/configmaps?watch=1&sendInitialEvents=true", ""},
		{"GET", "/api/v1/watch/namespaces/a/configmaps", ""},
		{"GET", "/api/v1/namespaces/a/pods/p/log", ""},
		{"POST", "/api/v1/namespaces/a/pods/p/exec", ""},
		{"POST", "/api/v1/namespaces/a/pods/p/attach", ""},
		{"POST", "/api/v1/namespaces/a/pods/p/portforward", ""},
		{"GET", "/api/v1/namespaces/a/services/s/proxy/metrics", ""},
		{"GET", "/api/v1/nodes/n/proxy/stats", ""},
		{"GET", "/api/v1/proxy/nodes/n", ""},
		{"GET", "/api", ""},
		{"GET", "/apis/apps/v1", ""},
		{"GET", "/version", ""},
		{"GET", "/openapi/v3/apis/apps/v1", ""},
		{"HEAD", "/api/v1/namespaces/a/configmaps/b", ""},
	} {
		kind, ok := measuredKind(httptest.NewRequest(c.method, "https://api"+c.path, nil))
		if kind != c.kind || ok != (c.kind != "") {
			t.Errorf("measuredKind(%s %s) = %q, %v; want %q", c.method, c.path, kind, ok, c.kind)
		}
	}
}
