package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/opkit-dev/opkit/hack/bench/internal/promtext"
)

// The memory scenario: a cluster filled with many objects the operators
// watch (fill.go's realistic shape), each operator started inside a memory
// cgroup (cgroup.go), first under a generous limit to measure it, then
// under smaller and smaller limits to find the smallest it survives.

type memoryOptions struct {
	objects   int           // fill objects: two thirds ConfigMaps, one third Secrets
	max       int64         // the measured run's limit, bytes
	precision int64         // the bisection stops when its interval is this narrow, bytes
	steps     int           // the bisection tries at most this many limits
	settle    time.Duration // from ready to the steady-state reading
	// peerLimit runs controller-runtime's Mirror with GOMEMLIMIT at
	// peerLimitRatio of its cgroup's limit, as opkit's manager sets its
	// own by default; without it the peer runs as controller-runtime
	// operators do by default, with no Go memory limit.
	peerLimit bool
}

// peerLimitRatio is opkit's default share of the cgroup's limit given to
// the Go runtime (manager.MemoryLimitOptions.Ratio).
const peerLimitRatio = 0.9

// The workload every memory run converges: small, as the cluster's size
// is what the scenario is about.
const (
	memoryNamespaces = 10
	memorySources    = 10
	// memoryPerNamespace is how many fill objects go in one namespace.
	memoryPerNamespace = 750
	// memoryPhaseTimeout bounds each phase of a trial's workload, and
	// memoryReadyFloor the time a trial's operator has to become ready
	// (or memoryReadyFactor times the measured run's, if longer): an
	// operator starved of memory may thrash rather than be killed.
	memoryPhaseTimeout = 2 * time.Minute
	memoryReadyFloor   = time.Minute
	memoryReadyFactor  = 3
)

// fill returns the cluster's fill for m.
func (m memoryOptions) fill() fillOptions {
	cms := m.objects * 2 / 3
	return fillOptions{configMaps: cms, secrets: m.objects - cms, namespaces: max(1, m.objects/memoryPerNamespace),
		shape: shapeRealistic, prefix: "memfill"}
}

// memoryResult is the memory scenario's figures of one implementation.
type memoryResult struct {
	// LimitBytes is the cgroup limit of the measured run.
	LimitBytes int64 `json:"limitBytes"`
	// GoMemLimitBytes is go_gc_gomemlimit_bytes on /metrics once ready:
	// the Go memory limit the process set (math.MaxInt64: none).
	GoMemLimitBytes int64 `json:"goMemLimitBytes"`
	// SyncPeakBytes is the cgroup's peak usage from the start until
	// /readyz passed; SyncPeakRSSBytes the process's VmHWM then.
	SyncPeakBytes    int64 `json:"syncPeakBytes"`
	SyncPeakRSSBytes int64 `json:"syncPeakRSSBytes"`
	// SettledBytes is the cgroup's usage the settle time after ready;
	// SteadyPeakBytes its peak from then until the workload converged.
	SettledBytes    int64 `json:"settledBytes"`
	SteadyPeakBytes int64 `json:"steadyPeakBytes"`
	// OOMKills counts the measured run's kills for lack of memory.
	OOMKills int64 `json:"oomKills"`
	// SmallestLimitBytes is the smallest limit it survived;
	// LargestFailedBytes the largest it did not (0: none tried).
	SmallestLimitBytes int64         `json:"smallestLimitBytes"`
	LargestFailedBytes int64         `json:"largestFailedBytes"`
	Trials             []memoryTrial `json:"trials"`
}

// memoryTrial is one run under a limit of the bisection.
type memoryTrial struct {
	LimitBytes   int64   `json:"limitBytes"`
	Survived     bool    `json:"survived"`
	Why          string  `json:"why,omitempty"` // why it did not survive
	ReadySeconds float64 `json:"readySeconds,omitempty"`
	PeakBytes    int64   `json:"peakBytes"` // the cgroup's peak over the trial
	OOMKills     int64   `json:"oomKills"`
}

// peerLimitText says what Go memory limit the peer runs with.
func peerLimitText(peerLimit bool) string {
	if peerLimit {
		return fmt.Sprintf("GOMEMLIMIT at %.0f%% of the cgroup's", peerLimitRatio*100)
	}
	return "none (its default)"
}

// peakBytes is the measured run's peak over its whole life.
func (m *memoryResult) peakBytes() int64 { return max(m.SyncPeakBytes, m.SteadyPeakBytes) }

// memoryRunner runs the memory scenario's operators.
type memoryRunner struct {
	o           options
	bins        map[string]string
	kubeconfig  string
	cgroups     *cgroupParent
	newWorkload func(run string) *workload
	runs        int // runs so far, for unique names
}

// memoryScenario fills the cluster with o.memory.fill(), runs the memory
// scenario in it and deletes the fill.
func memoryScenario(ctx context.Context, o options, cs kubernetes.Interface, bins map[string]string, kubeconfig string,
	newWorkload func(run string) *workload) ([]runResult, error) {
	f := o.memory.fill()
	if err := fillCluster(ctx, cs, f); err != nil {
		return nil, errors.Join(err, unfill(ctx, cs, f))
	}
	runs, err := runMemory(ctx, o, bins, kubeconfig, newWorkload)
	return runs, errors.Join(err, unfill(ctx, cs, f))
}

// runMemory measures every operator of o.impls under o.memory.max, then
// bisects the smallest limit each survives; the fill is in place.
func runMemory(ctx context.Context, o options, bins map[string]string, kubeconfig string, newWorkload func(run string) *workload) (runs []runResult, err error) {
	parent, err := newCgroupParent(cgroupMount)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, parent.remove()) }()
	r := &memoryRunner{o: o, bins: bins, kubeconfig: kubeconfig, cgroups: parent, newWorkload: newWorkload}
	for _, impl := range scenarioImpls(scenarioMemory, o.impls) {
		res, err := r.measure(ctx, impl)
		if err != nil {
			return runs, fmt.Errorf("memory, %s: %w", impl, err)
		}
		logf("memory %-11s limit %.0f MiB, Go limit %.0f MiB: ready %.2fs, sync peak %.1f MiB (RSS %.1f), settled %.1f MiB, steady peak %.1f MiB, OOM kills %d",
			impl, mib(res.Memory.LimitBytes), mib(res.Memory.GoMemLimitBytes), res.ReadySeconds, mib(res.Memory.SyncPeakBytes),
			mib(res.Memory.SyncPeakRSSBytes), mib(res.Memory.SettledBytes), mib(res.Memory.SteadyPeakBytes), res.Memory.OOMKills)
		readyTimeout := max(memoryReadyFloor, memoryReadyFactor*time.Duration(res.ReadySeconds*float64(time.Second)))
		m := res.Memory
		m.SmallestLimitBytes, m.LargestFailedBytes, err = bisect(ctx, o.memory, roundUp(m.peakBytes(), o.memory.precision), m.LimitBytes,
			func(ctx context.Context, limit int64) (bool, error) {
				t, err := r.trial(ctx, impl, limit, readyTimeout)
				m.Trials = append(m.Trials, t)
				return t.Survived, err
			})
		if err != nil {
			return runs, fmt.Errorf("memory, %s: %w", impl, err)
		}
		logf("memory %-11s smallest limit survived %.0f MiB, largest not survived %.0f MiB, in %d trials",
			impl, mib(m.SmallestLimitBytes), mib(m.LargestFailedBytes), len(m.Trials))
		runs = append(runs, res)
	}
	return runs, nil
}

// bisect returns the smallest limit that survives, and the largest that
// does not (0 if none was tried), to within m.precision, trying at most
// m.steps limits: first first (the measured peak, likely to survive),
// then halving the interval between the largest failure and the smallest
// success, or, until a limit below limit has survived, growing the
// largest failure by a quarter. limit, which the measured run survived,
// bounds it from above.
func bisect(ctx context.Context, m memoryOptions, first, limit int64, survives func(context.Context, int64) (bool, error)) (ok, failed int64, err error) {
	ok = limit
	next := min(first, limit)
	for range m.steps {
		if next <= failed || next >= ok {
			break
		}
		s, err := survives(ctx, next)
		if err != nil {
			return ok, failed, err
		}
		if s {
			ok = next
		} else {
			failed = next
		}
		if ok-failed <= m.precision {
			break
		}
		next = roundUp(failed+(ok-failed)/2, 1<<20)
		if ok == limit {
			// Nothing below the limit survived yet: grow by a quarter
			// rather than halve towards a limit far above the peak.
			next = min(next, roundUp(failed+failed/4, 1<<20))
		}
	}
	return ok, failed, nil
}

// roundUp rounds b up to a multiple of unit.
func roundUp(b, unit int64) int64 {
	return (b + unit - 1) / unit * unit
}

// start starts impl's operator in a new cgroup limited to limit bytes.
func (r *memoryRunner) start(impl string, limit int64, log io.Writer) (*process, *cgroup, error) {
	r.runs++
	c, err := r.cgroups.child(fmt.Sprintf("%s-%d", impl, r.runs), limit)
	if err != nil {
		return nil, nil, err
	}
	// Not the log file itself: the page cache of its writes would be
	// charged to the cgroup.
	p, err := newOperator(r.bins[impl], r.kubeconfig, r.o.workers, implArgs[impl], struct{ io.Writer }{log}, false)
	if err == nil && impl == cr && r.o.memory.peerLimit {
		p.cmd.Env = append(os.Environ(), fmt.Sprintf("GOMEMLIMIT=%d", int64(float64(limit)*peerLimitRatio)))
	}
	if err == nil {
		err = p.start(func() error { return c.start(p.cmd) })
	}
	if err != nil {
		return nil, nil, errors.Join(err, c.remove())
	}
	return p, c, nil
}

// stopIn stops p and removes its cgroup c.
func stopIn(p *process, c *cgroup) (cpu float64, err error) {
	cpu, _, err = p.stop()
	return cpu, errors.Join(err, c.remove())
}

// logFile creates the log of the run named name.
func (r *memoryRunner) logFile(name string) (*os.File, error) {
	path := filepath.Join(r.o.binDir, "logs", name+".log")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.Create(path)
}

// measure runs impl under o.memory.max: until ready, then settle, then
// the workload, reading the cgroup at each step.
func (r *memoryRunner) measure(ctx context.Context, impl string) (res runResult, err error) {
	res = runResult{Impl: impl, Round: 1, Scenario: scenarioMemory, Memory: &memoryResult{LimitBytes: r.o.memory.max}}
	name := fmt.Sprintf("memory-%s", impl)
	log, err := r.logFile(name)
	if err != nil {
		return res, err
	}
	defer log.Close()
	p, c, err := r.start(impl, r.o.memory.max, log)
	if err != nil {
		return res, err
	}
	w := r.newWorkload(name)
	m := res.Memory
	err = p.waitReady(ctx, 10*time.Minute)
	if err == nil {
		res.ReadySeconds = p.ready.Sub(p.started).Seconds()
		m.SyncPeakBytes, m.SyncPeakRSSBytes, err = readSyncPeak(p, c)
	}
	if err == nil {
		m.GoMemLimitBytes, err = goMemLimit(ctx, p)
	}
	if err == nil {
		err = sleep(ctx, r.o.memory.settle)
	}
	if err == nil {
		m.SettledBytes, err = c.usage()
	}
	if err == nil {
		err = c.resetPeakUsage()
	}
	if err == nil {
		err = phases(ctx, r.o, p, w, &res)
	}
	if err == nil {
		m.SteadyPeakBytes, err = c.peakUsage()
	}
	if err == nil {
		res.PeakRSSBytes, err = p.peakRSS()
	}
	m.OOMKills, _ = c.oomKills()
	cpu, stopErr := stopIn(p, c)
	res.CPUSeconds = cpu
	if err == nil {
		err = stopErr
	}
	if m.OOMKills > 0 && err != nil {
		err = fmt.Errorf("killed for lack of memory under the measured run's limit, %d MiB: raise -memory-max: %w", r.o.memory.max>>20, err)
	}
	return res, errors.Join(err, w.clean(ctx))
}

// readSyncPeak reads the cgroup's peak and the process's VmHWM when it has
// just become ready.
func readSyncPeak(p *process, c *cgroup) (cgroupPeak, rss int64, err error) {
	if cgroupPeak, err = c.peakUsage(); err != nil {
		return 0, 0, err
	}
	rss, err = p.peakRSS()
	return cgroupPeak, rss, err
}

// goMemLimit reads go_gc_gomemlimit_bytes from p's /metrics.
func goMemLimit(ctx context.Context, p *process) (int64, error) {
	body, err := p.scrape(ctx)
	if err != nil {
		return 0, err
	}
	v, err := promtext.Gauge(bytes.NewReader(body), "go_gc_gomemlimit_bytes")
	if err != nil {
		return 0, fmt.Errorf("read the Go memory limit of %s: %w", p.cmd.Path, err)
	}
	if v >= math.MaxInt64 { // none: the runtime's default, which float64 rounds up
		return math.MaxInt64, nil
	}
	return int64(v), nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// trial runs impl under limit: it survives if it becomes ready within
// readyTimeout and converges the workload with no process killed for
// lack of memory. Only errors of the benchmark itself are returned.
func (r *memoryRunner) trial(ctx context.Context, impl string, limit int64, readyTimeout time.Duration) (t memoryTrial, err error) {
	t.LimitBytes = limit
	name := fmt.Sprintf("memory-%s-%dmi", impl, limit>>20) // a namespace's name: lower case
	log, err := r.logFile(name)
	if err != nil {
		return t, err
	}
	defer log.Close()
	p, c, err := r.start(impl, limit, log)
	if err != nil {
		return t, err
	}
	w := r.newWorkload(name)
	o := r.o
	o.phaseTimeout = memoryPhaseTimeout
	var res runResult
	var runErr error
	readyErr := p.waitReady(ctx, readyTimeout)
	if readyErr == nil {
		t.ReadySeconds = p.ready.Sub(p.started).Seconds()
		runErr = phases(ctx, o, p, w, &res)
	}
	t.PeakBytes, err = c.peakUsage()
	if err == nil {
		t.OOMKills, err = c.oomKills()
	}
	exited := false
	select {
	case <-p.exited:
		exited = true
	default:
	}
	_, stopErr := stopIn(p, c)
	switch {
	case ctx.Err() != nil:
		err = errors.Join(context.Cause(ctx), err)
	case err != nil:
	case t.OOMKills > 0:
		t.Why = fmt.Sprintf("%d OOM kills", t.OOMKills)
	case readyErr != nil:
		t.Why = readyErr.Error()
	case runErr != nil && (exited || errors.Is(runErr, errNotConverged)):
		t.Why = runErr.Error()
	case runErr != nil:
		err = runErr // the benchmark's own failure, not the operator's
	case stopErr != nil:
		t.Why = stopErr.Error()
	default:
		t.Survived = true
	}
	logf("memory %-11s limit %4.0f MiB: survived %t, ready %.2fs, peak %.1f MiB, OOM kills %d %s (log: %s)",
		impl, mib(limit), t.Survived, t.ReadySeconds, mib(t.PeakBytes), t.OOMKills, t.Why, log.Name())
	return t, errors.Join(err, w.clean(ctx))
}

// memoryValue returns f of r's memory figures, or 0 for a run without.
func memoryValue(f func(*memoryResult) float64) func(runResult) float64 {
	return func(r runResult) float64 {
		if r.Memory == nil {
			return 0
		}
		return f(r.Memory)
	}
}

func memoryMiB(f func(*memoryResult) int64) func(runResult) float64 {
	return memoryValue(func(m *memoryResult) float64 { return mib(f(m)) })
}

// memoryFigures are the rows of the memory scenario's table.
func memoryFigures() []figure {
	return []figure{
		{name: "time to ready (s)", value: func(r runResult) float64 { return r.ReadySeconds }, operatorsOnly: true},
		{name: "Go memory limit (MiB, 0: none)", value: memoryMiB(func(m *memoryResult) int64 {
			if m.GoMemLimitBytes >= m.LimitBytes {
				return 0 // math.MaxInt64: the runtime's default, none
			}
			return m.GoMemLimitBytes
		}), operatorsOnly: true},
		{name: "peak during sync, cgroup (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.SyncPeakBytes }), operatorsOnly: true},
		{name: "peak RSS during sync (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.SyncPeakRSSBytes }), operatorsOnly: true},
		{name: "settled, cgroup (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.SettledBytes }), operatorsOnly: true},
		{name: "steady peak, cgroup (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.SteadyPeakBytes }), operatorsOnly: true},
		{name: "sync peak / steady peak (x)", value: memoryValue(func(m *memoryResult) float64 {
			if m.SteadyPeakBytes == 0 {
				return 0
			}
			return float64(m.SyncPeakBytes) / float64(m.SteadyPeakBytes)
		}), selfTarget: 1.2, operatorsOnly: true},
		{name: "peak, cgroup (MiB)", value: memoryMiB((*memoryResult).peakBytes), crTarget: 0.2, operatorsOnly: true},
		{name: "smallest limit survived (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.SmallestLimitBytes }), crTarget: 0.25, operatorsOnly: true},
		{name: "largest limit not survived (MiB)", value: memoryMiB(func(m *memoryResult) int64 { return m.LargestFailedBytes }), operatorsOnly: true},
		{name: "OOM kills, measured run", value: memoryValue(func(m *memoryResult) float64 { return float64(m.OOMKills) }), operatorsOnly: true},
		{name: "CPU, measured run (s)", value: func(r runResult) float64 { return r.CPUSeconds }, operatorsOnly: true},
	}
}

const memoryFooter = "Each operator ran in a memory cgroup of its own, first under the measured run's limit: the sync peak is the cgroup's peak usage " +
	"(what the kernel's OOM killer judges: anonymous memory, kernel memory and page cache charged to it) from start to the first passing /readyz, " +
	"the RSS peak the process's VmHWM then; settled is the cgroup's usage the settle time after; the steady peak the cgroup's peak from then " +
	"through a workload of 10 Mirrors × 10 namespaces created and updated. Then a bisection: a limit is survived if the operator becomes ready " +
	"and converges that workload with no OOM kill. The Go memory limit is go_gc_gomemlimit_bytes: opkit sets it from the cgroup's limit, " +
	"controller-runtime's Mirror, as controller-runtime operators do by default, does not (unless -memory-peer-gomemlimit gives it GOMEMLIMIT at 90% of its limit)."

// writeMemoryRuns writes every trial of the memory scenario.
func writeMemoryRuns(w io.Writer, runs []runResult) {
	fmt.Fprintf(w, "| implementation | limit (MiB) | survived | ready (s) | peak, cgroup (MiB) | OOM kills | why not |\n|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		if r.Memory == nil {
			continue
		}
		trials := slices.Clone(r.Memory.Trials)
		slices.SortStableFunc(trials, func(a, b memoryTrial) int { return int((b.LimitBytes - a.LimitBytes) >> 20) })
		for _, t := range trials {
			fmt.Fprintf(w, "| %s | %.0f | %t | %.2f | %.1f | %d | %s |\n", r.Impl, mib(t.LimitBytes), t.Survived, t.ReadySeconds, mib(t.PeakBytes), t.OOMKills, t.Why)
		}
	}
	fmt.Fprintln(w)
}
