package faults

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/test/internal/operators"
)

// convergeLimit bounds the wait for every copy after a fault: long enough
// for controller-runtime's restarted lease and cold caches too.
const convergeLimit = 3 * time.Minute

// processOutage takes the control plane down for length just after a
// load of source changes, brings it back, changes every source once more
// and measures the time from the return to the first act and to
// convergence. strict (opkit) fails t if a process exits or the copies do
// not converge.
func processOutage(t *testing.T, impl *operators.Implementation, strict bool, down, up func() error, length time.Duration) compareResult {
	p := startPair(t, impl, strict)
	_, stopLoad := p.w.changeSources(t, compareMirrors)
	pause(t, 2*time.Second) // reconciles in flight when the control plane goes
	stopLoad()
	downAt := time.Now()
	if err := down(); err != nil {
		t.Fatal(err)
	}
	upped := false
	t.Cleanup(func() {
		if !upped {
			_ = up()
		}
	})
	pause(t, length)
	if err := up(); err != nil {
		t.Fatal(err)
	}
	upped = true
	back := time.Now()
	res := compareResult{exits: p.exits(downAt)}
	p.editAll(t, "final")
	res.converged, res.firstAct = p.settle(t, strict, back, map[string]string{"v": "final"})
	res.relists = p.relists()
	res.note = fmt.Sprintf("exits counted from the outage's start; %v down", length)
	if strict && len(res.exits) > 0 {
		t.Errorf("a replica exited across the outage: %s", strings.Join(res.exits, "; "))
	}
	return res
}

// settle waits until every copy holds want and returns how long after
// since that was, and the first act after since; strict fails t if the
// copies do not converge.
func (p *pair) settle(t *testing.T, strict bool, since time.Time, want map[string]string) (converged, first time.Duration) {
	t.Helper()
	_, err := within(convergeLimit, p.converged(want))
	if err == nil {
		converged = time.Since(since)
	} else {
		converged = -1
		if strict {
			t.Errorf("the copies did not converge within %v: %v", convergeLimit, err)
		}
	}
	return converged, p.firstAct(since, 0)
}

// processSaturated runs the pair with clients limited to compareQPS
// requests a second under a minute of source changes, and watches the
// Lease: strict (opkit) fails t if its holder changes, the leader's
// gauge drops to 0 or a process exits, or the copies do not converge.
// The requests the leader sent over the minute (rest_client_requests_total,
// which both operators serve: opkit's from its manager's clients, its
// Lease's included; controller-runtime's from every client-go client in
// the process) against the budget show whether the load saturated it.
func processSaturated(t *testing.T, impl *operators.Implementation, strict bool) compareResult {
	q := fmt.Sprint(compareQPS)
	p := startPair(t, impl, strict, "--kube-api-qps", q, "--kube-api-burst", q)
	first, err := p.holder(t)
	if err != nil {
		t.Fatal(err)
	}
	reqBefore, err := p.a.Sum(imetrics.RESTClientRequests)
	if err != nil {
		t.Fatal(err)
	}
	last, stopLoad := p.w.changeSources(t, compareMirrors)
	began := time.Now()
	holders, fenced, samples := map[string]int{}, 0, 0
	for time.Since(began) < saturationSpan && !p.a.HasExited() {
		if h, err := p.holder(t); err == nil {
			holders[h]++
		}
		if leads, err := p.a.Leads(compareLease); err == nil && !leads {
			fenced++
		}
		samples++
		pause(t, 250*time.Millisecond)
	}
	span := time.Since(began)
	reqAfter, reqErr := p.a.Sum(imetrics.RESTClientRequests)
	stopLoad()
	stopped := time.Now()
	res := compareResult{exits: p.exits(began)}
	res.converged, res.firstAct = p.settle(t, strict, stopped, map[string]string{"v": fmt.Sprint(*last)})
	res.firstAct = notMeasured // the leader acted all along: no return to measure from
	res.relists = p.relists()
	lost := len(res.exits) > 0 || fenced > 0 || len(holders) != 1 || holders[first] == 0
	res.leaseLost = "no"
	if lost {
		res.leaseLost = fmt.Sprintf("yes: holders %v, a not leading in %d of %d samples", sortedKeys(holders), fenced, samples)
	}
	sent := "unknown (a exited)"
	if reqErr == nil {
		sent = fmt.Sprintf("%.0f", reqAfter-reqBefore)
	}
	res.note = fmt.Sprintf("a sent %s requests in %v (budget %.0f at %d/s, its Lease renewals included); converged counted from the load's end",
		sent, span.Round(time.Second), compareQPS*span.Seconds()+compareQPS, compareQPS)
	if strict && lost {
		t.Errorf("the leader lost its lease under its own load: %s; exits: %v", res.leaseLost, res.exits)
	}
	return res
}

// processTerm sends SIGTERM to the leader under a load of source changes
// and measures the time to the standby's first act. strict (opkit) fails
// t if that is later than client-go's bound on a released Lease (2.2
// RetryPeriods, its jitter, and a second for the drain and a loaded
// machine), if a process exits with an error, or if the copies do not
// converge.
func processTerm(t *testing.T, impl *operators.Implementation, strict bool) compareResult {
	p := startPair(t, impl, strict)
	last, stopLoad := p.w.changeSources(t, compareMirrors)
	pause(t, 2*time.Second)
	termAt := p.a.Signal(t, syscall.SIGTERM)
	pid := p.b.Cmd.Process.Pid
	_, err := within(time.Minute, func() error {
		if p.firstAct(termAt, pid) < 0 {
			return fmt.Errorf("b (pid %d) has not acted since SIGTERM", pid)
		}
		return nil
	})
	pause(t, time.Second) // b works under the load too
	stopLoad()
	stopped := time.Now()
	res := compareResult{firstAct: p.firstAct(termAt, pid)}
	res.converged, _ = p.settle(t, strict, stopped, map[string]string{"v": fmt.Sprint(*last)})
	select {
	case <-p.a.Exited:
	case <-time.After(time.Minute):
	}
	res.exits = p.exits(termAt)
	res.relists = p.relists()
	res.note = "first act: b's, from SIGTERM; exits counted from SIGTERM; converged counted from the load's end"
	bound := 11*manager.DefaultRetryPeriod/5 + time.Second
	if !strict {
		return res
	}
	switch {
	case err != nil:
		t.Errorf("the standby did not act within a minute of the leader's SIGTERM: %v", err)
	case res.firstAct > bound:
		t.Errorf("the standby first acted %v after the leader's SIGTERM, later than %v", res.firstAct, bound)
	}
	if !p.a.HasExited() || p.a.Err != nil || p.b.HasExited() {
		t.Errorf("after SIGTERM of a: %v; want a exited with code 0 and b running", res.exits)
	}
	return res
}

// pause lets the scenario's timeline run for d: a span of the test, not a
// wait for anything.
func pause(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-t.Context().Done():
	case <-time.After(d):
	}
}
