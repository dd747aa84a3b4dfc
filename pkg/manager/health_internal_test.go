package manager

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/opkit-dev/opkit/internal/budget"
)

// probe serves a GET of path by c with ctx, and returns the status and
// body.
func probe(ctx context.Context, c *checks, path string) (int, string) {
	w := httptest.NewRecorder()
	c.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil))
	return w.Code, w.Body.String()
}

// However fast probes come, a path's checks run at most once per
// probeSpacing: probes are unauthenticated, and a check's requests never
// wait for the API budget. Each path runs on its own, and a check's
// requests are filed in the health lane.
func TestProbesRunChecksAtMostOncePerSpacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newChecks("readyz")
		var ran atomic.Int64
		var lane atomic.Value
		if err := c.add("api", func(r *http.Request) error {
			ran.Add(1)
			l, _ := budget.Classify(httptest.NewRequestWithContext(r.Context(), http.MethodGet, "/api/v1/namespaces", nil))
			lane.Store(l)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for range 100 {
			if code, body := probe(t.Context(), c, "/readyz"); code != http.StatusOK {
				t.Fatalf("/readyz = %d %q", code, body)
			}
		}
		if n := ran.Load(); n != 1 {
			t.Errorf("100 probes at once ran the check %d times, want 1", n)
		}
		if l := lane.Load(); l != budget.LaneHealth {
			t.Errorf("the check's request is in lane %v, want %v", l, budget.LaneHealth)
		}
		probe(t.Context(), c, "/readyz/api")
		if n := ran.Load(); n != 2 {
			t.Errorf("after a probe of /readyz/api the check ran %d times, want 2: each path runs on its own", n)
		}
		time.Sleep(probeSpacing)
		probe(t.Context(), c, "/readyz")
		if n := ran.Load(); n != 3 {
			t.Errorf("a probe probeSpacing later: the check ran %d times in all, want 3", n)
		}
	})
}

// Probes that arrive while a run is in flight share it, even after
// probeSpacing; the probe that started it may leave without ending it (the
// run's context is not any one probe's), so that a caller who hangs up
// cannot fail the others' probes.
func TestProbesShareTheRunInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newChecks("readyz")
		release := make(chan struct{})
		var ran atomic.Int64
		if err := c.add("slow", func(r *http.Request) error {
			ran.Add(1)
			<-release
			return r.Context().Err()
		}); err != nil {
			t.Fatal(err)
		}
		first, hangUp := context.WithCancel(t.Context())
		firstDone := make(chan struct{})
		go func() {
			defer close(firstDone)
			probe(first, c, "/readyz")
		}()
		synctest.Wait()
		type answer struct {
			code int
			body string
		}
		answers := make(chan answer, 2)
		for range 2 {
			go func() {
				code, body := probe(t.Context(), c, "/readyz")
				answers <- answer{code, body}
			}()
			time.Sleep(2 * probeSpacing)
		}
		hangUp()
		<-firstDone
		close(release)
		for range 2 {
			if a := <-answers; a.code != http.StatusOK {
				t.Errorf("a probe sharing the run = %d %q, want 200", a.code, a.body)
			}
		}
		if n := ran.Load(); n != 1 {
			t.Errorf("the check ran %d times, want 1", n)
		}
	})
}

// A check that panics fails its probe, naming the panic, rather than
// crashing the process.
func TestCheckThatPanicsFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newChecks("healthz")
		if err := c.add("boom", func(*http.Request) error { panic(errors.New("boom")) }); err != nil {
			t.Fatal(err)
		}
		code, body := probe(t.Context(), c, "/healthz")
		if code != http.StatusInternalServerError || !strings.Contains(body, "[-]boom failed: panicked: boom") {
			t.Errorf("/healthz = %d %q, want 500 naming the panic", code, body)
		}
	})
}

// A failure is not reused once its run has finished: a process that has
// just become ready (its cache synced) says so at the next probe, however
// soon. test/deployed's TestEachRuleIsNeededAndReported saw a 500 a few
// milliseconds after the operator was ready.
func TestProbeAfterAFailureRunsTheChecksAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newChecks("readyz")
		var synced atomic.Bool
		if err := c.add("cache-sync", func(*http.Request) error {
			if !synced.Load() {
				return errors.New("not synced")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if code, _ := probe(t.Context(), c, "/readyz"); code != http.StatusInternalServerError {
			t.Fatalf("/readyz before the sync = %d, want 500", code)
		}
		synced.Store(true)
		time.Sleep(probeSpacing / 10)
		if code, body := probe(t.Context(), c, "/readyz"); code != http.StatusOK {
			t.Errorf("/readyz just after the sync = %d %q, want 200: the failed run was reused", code, body)
		}
	})
}
