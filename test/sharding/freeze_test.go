package sharding

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/opkit-dev/opkit/test/internal/operators"
)

// Lease timings of the frozen leader test: test/faults' failover timings,
// long enough there for a leader on a busy two-core machine running -race
// to keep renewing, and short enough here for a freeze past the lease to
// take seconds. Lease durations are stored in whole seconds.
const (
	freezeLease = 3 * time.Second
	freezeRenew = 2 * time.Second
	freezeRetry = 500 * time.Millisecond
	// beyondLease is how long past freezeLease the leader stays frozen at
	// least: a standby takes over within LeaseDuration + 2.2 RetryPeriods
	// of the leader's last renewal (client-go's jitter; test/faults'
	// failover bound), which one second covers, and one more is margin
	// for a loaded machine.
	beyondLease = 2 * time.Second
	// afterThaw is how long the changes go on after the old leader wakes:
	// unfenced, it acts for about RenewDeadline then (client-go's elector
	// counts the deadline from its first failed renewal after the pause),
	// and the rest leaves time for what follows it to show.
	afterThaw     = freezeRenew + 3*time.Second
	freezeMirrors = 50
	freezeLeaseID = "frozen-leader"
)

// freezeRunsEnv, set to N, runs the frozen leader scenario N times on
// opkit and on controller-runtime in alternation and logs a table of both
// (make test-leader-freeze). Unset, the scenario runs once, on opkit.
const freezeRunsEnv = "OPKIT_LEADER_FREEZE_RUNS"

// Two replicas run with leader election under continuous changes. The
// leader is frozen (SIGSTOP) until the standby has been elected and has
// acted, and past its lease, then thawed (SIGCONT) while the changes go on
// for longer than RenewDeadline. Once the new leader has acted, the old
// one must neither start a reconcile nor send a write: the moment it
// wakes, its last successful renewal is older than RenewDeadline on its
// own monotonic clock. The new leader must not act before the old one's
// last act before the freeze, and every copy converges. The old leader
// may exit on its own (lost leadership is an error exit) but must not act
// first.
//
// With OPKIT_LEADER_FREEZE_RUNS=N the scenario runs N times on opkit and
// on controller-runtime (hack/bench/crmirror: the same reconciler) in
// alternation, and a table compares them; controller-runtime's overlaps
// are reported, not failed on.
func TestFrozenLeaderStopsActing(t *testing.T) {
	runs, compare := freezeRuns(t)
	dir := t.TempDir()
	opkit, peer := operators.Implementations(dir)
	var rows []freezeRow
	for i := 1; i <= runs; i++ {
		row := freezeRow{run: i}
		row.opkitOK = t.Run(fmt.Sprintf("run%d/%s", i, opkit.Name), func(t *testing.T) { row.opkit = opkitFrozenLeader(t, opkit) })
		if compare {
			row.peerOK = t.Run(fmt.Sprintf("run%d/%s", i, peer.Name), func(t *testing.T) { row.peer = peerFrozenLeader(t, peer) })
		}
		rows = append(rows, row)
	}
	if compare {
		t.Logf("a leader frozen past its lease, then thawed: its reconcile starts and writes after the new leader's first act (+ the new leader's before the old one's last), and how long it acted for\n%s", freezeTable(rows))
	}
}

// freezeRuns returns how many times to run the scenario, and whether to
// run it on controller-runtime too.
func freezeRuns(t *testing.T) (int, bool) {
	v := os.Getenv(freezeRunsEnv)
	if v == "" {
		return 1, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a number of runs, at least 1", freezeRunsEnv, v)
	}
	return n, true
}

// opkitFrozenLeader runs the scenario on the sample operator: any overlap
// fails it.
func opkitFrozenLeader(t *testing.T, impl *operators.Implementation) *freezeResult {
	res := frozenLeader(t, impl)
	if res.overlaps() > 0 {
		t.Errorf("the old leader acted after the new one began: %d reconcile starts and %d writes over %v; the new one acted %d times before the old one's last act",
			res.aStarts, res.aWrites, res.acting().Round(time.Millisecond), res.bEarly)
	}
	return &res
}

// peerFrozenLeader runs the scenario on controller-runtime, for the
// comparison: overlaps are expected there, and only logged.
func peerFrozenLeader(t *testing.T, impl *operators.Implementation) *freezeResult {
	res := frozenLeader(t, impl)
	return &res
}

// frozenLeader runs the scenario once on impl and returns what the record
// file says of it; only a scenario that could not run fails t.
func frozenLeader(t *testing.T, impl *operators.Implementation) freezeResult {
	began := time.Now()
	bin := impl.Binary(t)
	w := newWorld(t, freezeMirrors)
	ctx := t.Context()
	dir := t.TempDir()
	kubeconfig, records := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "acts")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--kubeconfig", kubeconfig, "-v", "1", "--max-concurrent-reconciles", "4", "--record-reconciles", records,
		"--leader-elect", "--leader-election-namespace", w.home, "--leader-election-id", freezeLeaseID,
		"--leader-elect-lease-duration", freezeLease.String(), "--leader-elect-renew-deadline", freezeRenew.String(),
		"--leader-elect-retry-period", freezeRetry.String()}, impl.Args...)
	a := operators.Start(t, "a", bin, args...)
	eventually(t, 30*time.Second, "a leads", leading(a, true))
	b := operators.Start(t, "b", bin, args...)
	eventually(t, 30*time.Second, "b stands by", leading(b, false))
	eventually(t, 30*time.Second, "a copies every Mirror", func() error { return w.converged(ctx) })
	pidA, pidB := a.Cmd.Process.Pid, b.Cmd.Process.Pid

	stop := w.load(t)
	t.Cleanup(stop)
	hold(t, time.Second) // a reconciles and writes under the load
	frozeAt := a.Signal(t, syscall.SIGSTOP)
	eventually(t, 30*time.Second, "b takes over", leading(b, true))
	elected := time.Since(frozeAt)
	eventually(t, 30*time.Second, "b acts", func() error { return hasActed(records, pidB) })
	acted := time.Now()
	// Frozen past its lease, and until b has worked for a second.
	hold(t, max(time.Until(frozeAt.Add(freezeLease+beyondLease)), time.Until(acted.Add(time.Second))))
	thawedAt := a.Signal(t, syscall.SIGCONT)
	hold(t, afterThaw)
	stop()
	d := eventually(t, 30*time.Second, "every copy converges", func() error { return w.converged(ctx) })

	termAt := time.Now()
	for _, r := range []*replica{a, b} {
		_ = r.Cmd.Process.Signal(syscall.SIGTERM) // a may have exited already
	}
	errA, errB := a.Wait(t, 60*time.Second), b.Wait(t, 60*time.Second)
	if errB != nil {
		t.Errorf("b exited with %v after SIGTERM", errB)
	}
	exitA := "at SIGTERM"
	if a.ExitedAt.Before(termAt) {
		exitA = fmt.Sprintf("on its own %v after SIGCONT", a.ExitedAt.Sub(thawedAt).Round(time.Millisecond))
	}

	acts, err := operators.ReadActs(records)
	if err != nil {
		t.Fatal(err)
	}
	res, err := judge(acts, pidA, pidB, frozeAt.UnixNano())
	if err != nil {
		t.Fatal(err)
	}
	res.took = time.Since(began)
	t.Logf("%s: b elected %v after SIGSTOP, acted %v after it; a thawed %v after it; copies converged %v after the load stopped; a exited %s (%v); the scenario took %v",
		impl.Name, elected.Round(time.Millisecond), acted.Sub(frozeAt).Round(time.Millisecond), thawedAt.Sub(frozeAt).Round(time.Millisecond),
		d.Round(time.Millisecond), exitA, errA, res.took.Round(time.Second))
	res.log(t, impl.Name, thawedAt.UnixNano())
	if res.overlaps() > 0 {
		for _, r := range []*replica{a, b} {
			logLeadership(t, r)
		}
	}
	return res
}

// logLeadership logs the lines of r's log (JSON, one object a line)
// whose message speaks of its lease, its leadership or its fence, to tell
// an overlap's cause.
func logLeadership(t *testing.T, r *replica) {
	t.Helper()
	b, err := os.ReadFile(r.Log)
	if err != nil {
		t.Logf("%s's log: %v", r.Name, err)
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		var entry struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &entry) != nil {
			continue
		}
		msg := strings.ToLower(entry.Msg)
		if strings.Contains(msg, "lease") || strings.Contains(msg, "leader") || strings.Contains(msg, "leads") {
			t.Logf("%s: %s", r.Name, line)
		}
	}
}

// leading checks that r holds the Lease, or stands by, as want says.
func leading(r *replica, want bool) func() error {
	return func() error {
		got, err := r.Leads(freezeLeaseID)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s leads: %v", r.Name, got)
		}
		return nil
	}
}

// hasActed checks that pid has started a reconcile or sent a write.
func hasActed(records string, pid int) error {
	acts, err := operators.LiveActs(records)
	if err != nil {
		return err
	}
	for _, a := range acts {
		if a.PID == pid && a.Kind != "end" {
			return nil
		}
	}
	return fmt.Errorf("pid %d has neither started a reconcile nor sent a write", pid)
}

// hold lets the scenario's timeline run for d: a span of the test, not a
// wait for anything.
func hold(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-t.Context().Done():
	case <-time.After(d):
	}
}

// freezeResult is what one run of the scenario recorded.
type freezeResult struct {
	aStarts, aWrites int   // the old leader's reconcile starts and writes after the new leader's first act
	aFirst, aLast    int64 // when the first and last of them were (unix nanoseconds)
	bEarly           int   // the new leader's starts and writes before the old leader's last act before the freeze
	bFirst           int64 // the new leader's first act
	aBefore          int64 // the old leader's last act before the freeze
	examples         []act // the first overlapping acts
	took             time.Duration
}

func (r freezeResult) overlaps() int { return r.aStarts + r.aWrites + r.bEarly }

// acting is the span of the old leader's acts after the new leader's
// first.
func (r freezeResult) acting() time.Duration {
	if r.aStarts+r.aWrites == 0 {
		return 0
	}
	return time.Duration(r.aLast - r.aFirst)
}

// judge finds, in acts, the reconcile starts and writes of the old leader
// (pid a) after the new leader's (pid b) first, and those of b before a's
// last one before frozeAt. Both must have acted: a before the freeze, b at
// all.
func judge(acts []act, a, b int, frozeAt int64) (freezeResult, error) {
	acts = slices.DeleteFunc(slices.Clone(acts), func(x act) bool { return x.Kind == "end" })
	slices.SortStableFunc(acts, func(x, y act) int { return cmp.Compare(x.At, y.At) })
	r := freezeResult{bFirst: math.MaxInt64}
	for _, x := range acts {
		switch {
		case x.PID == a && x.At < frozeAt:
			r.aBefore = x.At
		case x.PID == b:
			r.bFirst = min(r.bFirst, x.At)
		}
	}
	switch {
	case r.aBefore == 0:
		return r, errors.New("the leader neither reconciled nor wrote before the freeze: the scenario shows nothing")
	case r.bFirst == math.MaxInt64:
		return r, errors.New("the standby neither reconciled nor wrote after it took over: the scenario shows nothing")
	}
	for _, x := range acts {
		switch {
		case x.PID == a && x.At > r.bFirst:
			if x.Kind == "start" {
				r.aStarts++
			} else {
				r.aWrites++
			}
			if r.aFirst == 0 {
				r.aFirst = x.At
			}
			r.aLast = x.At
		case x.PID == b && x.At < r.aBefore:
			r.bEarly++
		default:
			continue
		}
		if len(r.examples) < 5 {
			r.examples = append(r.examples, x)
		}
	}
	return r, nil
}

// log reports the result, times relative to the old leader's thaw.
func (r freezeResult) log(t *testing.T, name string, thawedAt int64) {
	t.Helper()
	rel := func(at int64) time.Duration { return time.Duration(at - thawedAt).Round(time.Millisecond) }
	if r.aStarts+r.aWrites > 0 {
		t.Logf("%s: after b's first act, a started %d reconciles and sent %d writes, from %v to %v after SIGCONT: it acted for %v after the new leader began",
			name, r.aStarts, r.aWrites, rel(r.aFirst), rel(r.aLast), r.acting().Round(time.Millisecond))
	} else {
		t.Logf("%s: a neither started a reconcile nor sent a write after b's first act (%v after SIGCONT)", name, rel(r.bFirst))
	}
	if r.bEarly > 0 {
		t.Logf("%s: b started reconciles or sent writes %d times before a's last act before the freeze", name, r.bEarly)
	}
	for _, x := range r.examples {
		t.Logf("%s:   e.g. pid %d %s %s %v after SIGCONT", name, x.PID, x.Kind, x.What, rel(x.At))
	}
}

// freezeRow is one run of the comparison; a nil result is a run that was
// skipped (ok) or could not run (not ok).
type freezeRow struct {
	run             int
	opkit, peer     *freezeResult
	opkitOK, peerOK bool
}

// freezeTable tabulates the comparison.
func freezeTable(rows []freezeRow) string {
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\topkit overlaps\topkit acted after (s)\tcontroller-runtime overlaps\tcontroller-runtime acted after (s)\t")
	cells := func(r *freezeResult, ok bool) string {
		switch {
		case r != nil:
			return fmt.Sprintf("%d (%d starts, %d writes, %d early)\t%.3f", r.overlaps(), r.aStarts, r.aWrites, r.bEarly, r.acting().Seconds())
		case ok:
			return "skipped\t-"
		default:
			return "failed\t-"
		}
	}
	for _, row := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t\n", row.run, cells(row.opkit, row.opkitOK), cells(row.peer, row.peerOK))
	}
	tw.Flush()
	for _, impl := range []struct {
		name string
		get  func(freezeRow) *freezeResult
	}{{"opkit", func(r freezeRow) *freezeResult { return r.opkit }}, {"controller-runtime", func(r freezeRow) *freezeResult { return r.peer }}} {
		ran, overlapped, longest := 0, 0, time.Duration(0)
		for _, row := range rows {
			if r := impl.get(row); r != nil {
				ran++
				if r.overlaps() > 0 {
					overlapped++
				}
				longest = max(longest, r.acting())
			}
		}
		fmt.Fprintf(&sb, "%s: overlaps in %d of %d runs; the old leader acted for at most %.3fs after the new one began\n", impl.name, overlapped, ran, longest.Seconds())
	}
	return sb.String()
}
