package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/opkit-dev/opkit/hack/bench/internal/promtext"
)

// The memory scenario: a cluster filled with many objects the operators
// watch (fill.go, of one shape), each operator started inside a memory
// cgroup (cgroup.go) with its binary's pages charged to it
// (pagecache.go), first under a generous limit to measure it, then under
// smaller and smaller limits to find the smallest it survives, and how
// fast it converged there.

type memoryOptions struct {
	objects   int           // fill objects: two thirds ConfigMaps, one third Secrets
	shape     string        // the fill objects' shape: shapeRealistic or shapeSmall
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
		shape: m.shape, prefix: "memfill"}
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
	// RSSFileBytes is the process's RssFile once ready: its resident
	// file-backed pages, its binary's mostly. CacheBytes is the page
	// cache charged to its cgroup then, which holds them when they are
	// charged as a container's are (pagecache.go).
	RSSFileBytes int64 `json:"rssFileBytes"`
	CacheBytes   int64 `json:"cacheBytes"`
	// BinaryCachedBytes is how much of the binary was still in the page
	// cache, charged to another cgroup, when the measured run started
	// (0: all of its pages that it touched were charged to its own).
	BinaryCachedBytes int64 `json:"binaryCachedBytes"`
	// ConvergeSeconds is from the start until the workload converged and
	// ConvergeCPUSeconds the process's CPU then, the settle time and its
	// CPU left out: what a trial's Seconds and CPUSeconds compare with.
	ConvergeSeconds    float64 `json:"convergeSeconds"`
	ConvergeCPUSeconds float64 `json:"convergeCPUSeconds"`
	// LoadAvg is the host's 1-minute load average when it started.
	LoadAvg float64 `json:"loadAvg"`
	// FillConfigMapBytes and FillSecretBytes are the fill objects' mean
	// size as JSON, as the API server holds them (fillSizes).
	FillConfigMapBytes float64 `json:"fillConfigMapBytes,omitempty"`
	FillSecretBytes    float64 `json:"fillSecretBytes,omitempty"`
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
	// Seconds is from the start until the workload converged, or, if it
	// did not survive, until the trial gave up; CPUSeconds the process's
	// CPU then.
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakBytes  int64   `json:"peakBytes"` // the cgroup's peak over the trial
	OOMKills   int64   `json:"oomKills"`
	// BinaryCachedBytes and LoadAvg: as memoryResult's, at its start.
	BinaryCachedBytes int64   `json:"binaryCachedBytes"`
	LoadAvg           float64 `json:"loadAvg"`
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

// atSmallest returns the time to converge and the CPU at the smallest
// limit survived: its trial's, or the measured run's if nothing smaller
// survived.
func (m *memoryResult) atSmallest() (seconds, cpu float64) {
	for _, t := range m.Trials {
		if t.Survived && t.LimitBytes == m.SmallestLimitBytes {
			return t.Seconds, t.CPUSeconds
		}
	}
	return m.ConvergeSeconds, m.ConvergeCPUSeconds
}

// binaryCached is the most of the binary left cached, charged to another
// cgroup, at the start of any of the runs.
func (m *memoryResult) binaryCached() int64 {
	n := m.BinaryCachedBytes
	for _, t := range m.Trials {
		n = max(n, t.BinaryCachedBytes)
	}
	return n
}

// loadAvgMax is the highest load average at the start of any of the runs.
func (m *memoryResult) loadAvgMax() float64 {
	l := m.LoadAvg
	for _, t := range m.Trials {
		l = max(l, t.LoadAvg)
	}
	return l
}

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
	cm, secret, err := fillSizes(ctx, cs, f)
	if err != nil {
		return nil, errors.Join(err, unfill(ctx, cs, f))
	}
	runs, err := runMemory(ctx, o, bins, kubeconfig, newWorkload)
	for _, r := range runs {
		r.Memory.FillConfigMapBytes, r.Memory.FillSecretBytes = cm, secret
	}
	return runs, errors.Join(err, unfill(ctx, cs, f))
}

// fillSizes returns the mean size of f's ConfigMaps and Secrets as JSON,
// as the API server holds them (managedFields and annotations included),
// over those of its first namespace.
func fillSizes(ctx context.Context, cs kubernetes.Interface, f fillOptions) (cm, secret float64, err error) {
	ns := f.namespace(0)
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: fillLabel + "=true"})
	if err != nil {
		return 0, 0, err
	}
	secrets, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: fillLabel + "=true"})
	if err != nil {
		return 0, 0, err
	}
	mean := func(n int, item func(int) any) (float64, error) {
		var total int
		for i := range n {
			b, err := json.Marshal(item(i))
			if err != nil {
				return 0, err
			}
			total += len(b)
		}
		return float64(total) / float64(max(n, 1)), nil
	}
	if cm, err = mean(len(cms.Items), func(i int) any { return &cms.Items[i] }); err != nil {
		return 0, 0, err
	}
	secret, err = mean(len(secrets.Items), func(i int) any { return &secrets.Items[i] })
	return cm, secret, err
}

// memorySizes says the fill's mean object sizes, for the title.
func memorySizes(runs []runResult) string {
	for _, r := range runs {
		if m := r.Memory; m != nil && m.FillConfigMapBytes > 0 {
			return fmt.Sprintf("; mean size as JSON from the API server: ConfigMap %.1f KiB, Secret %.1f KiB", m.FillConfigMapBytes/1024, m.FillSecretBytes/1024)
		}
	}
	return ""
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
		logf("memory %-14s limit %.0f MiB, Go limit %.0f MiB: ready %.2fs, sync peak %.1f MiB (RSS %.1f, RssFile %.1f, page cache %.1f), settled %.1f MiB, steady peak %.1f MiB, converged in %.2fs with %.2fs CPU, OOM kills %d",
			impl, mib(res.Memory.LimitBytes), mib(res.Memory.GoMemLimitBytes), res.ReadySeconds, mib(res.Memory.SyncPeakBytes),
			mib(res.Memory.SyncPeakRSSBytes), mib(res.Memory.RSSFileBytes), mib(res.Memory.CacheBytes), mib(res.Memory.SettledBytes),
			mib(res.Memory.SteadyPeakBytes), res.Memory.ConvergeSeconds, res.Memory.ConvergeCPUSeconds, res.Memory.OOMKills)
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
		logf("memory %-14s smallest limit survived %.0f MiB, largest not survived %.0f MiB, in %d trials",
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

// started is what memoryRunner.start saw as it started a run.
type started struct {
	binaryCached int64   // bytes of the binary still cached after eviction
	loadAvg      float64 // the host's 1-minute load average
}

// start starts impl's operator in a new cgroup limited to limit bytes,
// its binary evicted from the page cache first, so that the pages it
// touches are charged to that cgroup (pagecache.go).
func (r *memoryRunner) start(impl string, limit int64, log io.Writer) (*process, *cgroup, started, error) {
	r.runs++
	var st started
	var err error
	if st.loadAvg, err = loadAvg(); err != nil {
		return nil, nil, st, err
	}
	c, err := r.cgroups.child(fmt.Sprintf("%s-%d", impl, r.runs), limit)
	if err != nil {
		return nil, nil, st, err
	}
	// Not the log file itself: the page cache of its writes would be
	// charged to the cgroup.
	p, err := newOperator(r.bins[impl], r.kubeconfig, r.o.workers, implArgs[impl], struct{ io.Writer }{log}, false)
	if err == nil && isCR(impl) && r.o.memory.peerLimit {
		p.cmd.Env = append(os.Environ(), fmt.Sprintf("GOMEMLIMIT=%d", int64(float64(limit)*peerLimitRatio)))
	}
	if err == nil {
		st.binaryCached, err = evictPageCache(r.bins[impl])
	}
	if err == nil && st.binaryCached > 0 {
		logf("memory %-14s %.1f MiB of %s still cached after eviction, charged to another cgroup (is it running elsewhere?)", impl, mib(st.binaryCached), r.bins[impl])
	}
	if err == nil {
		err = p.start(func() error { return c.start(p.cmd) })
	}
	if err != nil {
		return nil, nil, st, errors.Join(err, c.remove())
	}
	return p, c, st, nil
}

// isCR says whether impl is one of controller-runtime's Mirrors.
func isCR(impl string) bool { return impl == cr || impl == crCM }

// loadAvg returns the host's 1-minute load average.
func loadAvg() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("read /proc/loadavg: empty")
	}
	return strconv.ParseFloat(f[0], 64)
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
	p, c, st, err := r.start(impl, r.o.memory.max, log)
	if err != nil {
		return res, err
	}
	w := r.newWorkload(name)
	m := res.Memory
	m.BinaryCachedBytes, m.LoadAvg = st.binaryCached, st.loadAvg
	var readyCPU, settledCPU, convergedCPU float64
	err = p.waitReady(ctx, 10*time.Minute)
	if err == nil {
		res.ReadySeconds = p.ready.Sub(p.started).Seconds()
		m.SyncPeakBytes, m.SyncPeakRSSBytes, err = readSyncPeak(p, c)
	}
	if err == nil {
		readyCPU, err = p.cpuSeconds()
	}
	if err == nil {
		err = r.readReady(ctx, impl, p, c, m)
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
		settledCPU, err = p.cpuSeconds()
	}
	if err == nil {
		err = phases(ctx, r.o, p, w, &res)
	}
	if err == nil {
		convergedCPU, err = p.cpuSeconds()
		m.ConvergeSeconds = res.ReadySeconds + res.CreateSeconds + res.UpdateSeconds
		m.ConvergeCPUSeconds = readyCPU + convergedCPU - settledCPU
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

// readReady reads, once p is ready, its Go memory limit, its resident
// file-backed pages and the page cache charged to c; and checks that
// controller-runtime's ConfigMap-only Mirror has listed no Secret.
func (r *memoryRunner) readReady(ctx context.Context, impl string, p *process, c *cgroup, m *memoryResult) error {
	body, err := p.scrape(ctx)
	if err != nil {
		return err
	}
	if m.GoMemLimitBytes, err = goMemLimit(p, body); err != nil {
		return err
	}
	if impl == crCM && bytes.Contains(body, []byte(`crmirror_list_requests_total{resource="secrets"}`)) {
		return fmt.Errorf("%s listed Secrets, which it must not watch", impl)
	}
	if m.RSSFileBytes, err = p.rssFile(); err != nil {
		return err
	}
	m.CacheBytes, err = c.cacheBytes()
	return err
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

// goMemLimit reads go_gc_gomemlimit_bytes from body, p's /metrics.
func goMemLimit(p *process, body []byte) (int64, error) {
	v, err := promtext.Gauge(bytes.NewReader(body), "go_gc_gomemlimit_bytes")
	if err != nil {
		return 0, fmt.Errorf("read the Go memory limit of %s: %w", p.name(), err)
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
	p, c, st, err := r.start(impl, limit, log)
	if err != nil {
		return t, err
	}
	t.BinaryCachedBytes, t.LoadAvg = st.binaryCached, st.loadAvg
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
	t.Seconds = time.Since(p.started).Seconds()
	if readyErr == nil && runErr == nil {
		t.Seconds = t.ReadySeconds + res.CreateSeconds + res.UpdateSeconds
	}
	cpuErr := errors.New("exited")
	if !p.hasExited() {
		t.CPUSeconds, cpuErr = p.cpuSeconds()
	}
	t.PeakBytes, err = c.peakUsage()
	if err == nil {
		t.OOMKills, err = c.oomKills()
	}
	exited := p.hasExited()
	cpu, stopErr := stopIn(p, c)
	if cpuErr != nil {
		t.CPUSeconds = cpu // over its whole life: it exited, or /proc said no
	}
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
	logf("memory %-14s limit %4.0f MiB: survived %t, ready %.2fs, %.2fs and %.2fs CPU to converge (or give up), peak %.1f MiB, OOM kills %d %s (log: %s)",
		impl, mib(limit), t.Survived, t.ReadySeconds, t.Seconds, t.CPUSeconds, mib(t.PeakBytes), t.OOMKills, t.Why, log.Name())
	return t, errors.Join(err, w.clean(ctx))
}
