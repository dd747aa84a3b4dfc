// Command e2e is opkit's end-to-end benchmark: the Mirror operator of
// cmd/sample-operator run on opkit, the same reconciler run on
// controller-runtime (hack/bench/crmirror), and a bare client writing the
// same objects (hack/bench/baremirror), one at a time as their own
// processes against one control plane, in alternation for several rounds.
// It measures them from outside: /readyz, /metrics, /proc and the API
// server. -scenarios picks the workloads, which run in this order:
//
//   - original: each run creates N namespaces and M source ConfigMaps with
//     Mirrors that select all the namespaces, waits until the API server
//     holds the N×M copies, then updates every source and waits until
//     every copy follows. Figures: wall time of both phases, the operator
//     process's CPU seconds, peak RSS and API requests by method.
//   - fill: the same, in a cluster first filled, once, with ConfigMaps and
//     Secrets the operator watches but never copies, half as kubectl apply
//     creates them and half by server-side apply (fill.go); deleted after
//     the scenario. Figures add the time from process start to ready and
//     the heap right after (go_memstats_heap_inuse_bytes).
//   - noisy: quiet tenants, each changing its one source and timing its
//     copies, open-loop: every quiet tenant changes every -quiet-every,
//     whatever the latency; first alone (the floor), then while another
//     tenant floods the operator with Mirrors and a burst of source updates
//     (noisy.go, quiet.go). Figures: the quiet changes' latencies, the quiet
//     load offered during the flood and the flood's time. The bare client
//     does not run it.
//   - memory (not run unless named; needs root): in a cluster filled with
//     -memory-objects ConfigMaps and Secrets of fill's -memory-shape,
//     opkit's operator and controller-runtime's two (caching ConfigMaps
//     and Secrets in full, and ConfigMaps only), each started inside a
//     memory cgroup of its own (cgroup v2, or v1's memory hierarchy) with
//     its binary's pages charged to it (pagecache.go): first under
//     -memory-max, measuring the cgroup's peak until ready, its usage once
//     settled and its peak through a small workload; then under smaller
//     limits, bisecting the smallest each survives, with the time and CPU
//     to converge at each (memory.go, cgroup.go). The cgroups go when the
//     benchmark ends.
//
// It prints each scenario's medians and opkit's ratios to its peers against
// their targets as a table, and writes the tables as markdown, every run as
// JSON and a chart of every run as PNG into -out.
//
//	go -C hack/bench run ./e2e                # full sizes (see -h), 5 rounds
//	BENCH_QUICK=1 go -C hack/bench run ./e2e  # small sizes, 1 round
//
// hack/bench is a module of its own beside the SDK's; the benchmark builds
// the operators and writes its results in the opkit checkout around it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror/mirrortest"
	"github.com/opkit-dev/opkit/hack/bench/internal/repo"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

type options struct {
	namespaces, sources, rounds, workers, payload int
	impls                                         []string
	warmup                                        bool
	from                                          string
	opkitPkg                                      string // the package built as opkit's operator
	opkitPprof                                    bool   // it serves /debug/pprof beside /metrics
	pprofDir                                      string // where to write the operators' profiles
	pprofSeconds                                  int
	out, binDir                                   string
	phaseTimeout                                  time.Duration
	scenarios                                     []string
	fill                                          fillOptions
	// serverCPU reads the API server's CPU seconds so far, if set.
	serverCPU func(context.Context) (float64, error)
	noisy     noisyOptions
	memory    memoryOptions
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
}

func parse(args []string, root string) (options, error) {
	quick := os.Getenv("BENCH_QUICK") != "" && os.Getenv("BENCH_QUICK") != "0"
	memoryObjects := 60000
	if quick {
		memoryObjects = 6000
	}
	o := options{namespaces: 50, sources: 40, rounds: 5,
		fill:  fillOptions{configMaps: 20000, secrets: 10000, namespaces: 40, shape: shapeRealistic},
		noisy: noisyOptions{quiet: 20, quietNamespaces: 3, quietEvery: 500 * time.Millisecond, floorWaves: 10, flood: 1000, floodNamespaces: 20, burstUpdates: 2}}
	if quick {
		o = options{namespaces: 10, sources: 10, rounds: 1,
			fill:  fillOptions{configMaps: 2000, secrets: 1000, namespaces: 10, shape: shapeRealistic},
			noisy: noisyOptions{quiet: 5, quietNamespaces: 3, quietEvery: 500 * time.Millisecond, floorWaves: 10, flood: 100, floodNamespaces: 5, burstUpdates: 2}}
	}
	fs := flag.NewFlagSet("e2e", flag.ContinueOnError)
	fs.IntVar(&o.namespaces, "namespaces", o.namespaces, "namespaces each Mirror selects (BENCH_QUICK=1: 10)")
	fs.IntVar(&o.sources, "sources", o.sources, "source ConfigMaps, each with a Mirror (BENCH_QUICK=1: 10)")
	fs.IntVar(&o.rounds, "rounds", o.rounds, "runs of each implementation, in alternation (BENCH_QUICK=1: 1)")
	fs.IntVar(&o.workers, "workers", 4, "--max-concurrent-reconciles of every implementation")
	fs.IntVar(&o.payload, "payload", 1024, "bytes of payload in every source")
	scenarioList := fs.String("scenarios", strings.Join(defaultScenarios, ","), "scenarios to run, in this order: original, fill (a cluster full of objects), noisy (a noisy neighbour), memory (under a cgroup memory limit, as root)")
	fs.IntVar(&o.fill.configMaps, "fill-configmaps", o.fill.configMaps, "fill: ConfigMaps in the cluster (BENCH_QUICK=1: 2000)")
	fs.IntVar(&o.fill.secrets, "fill-secrets", o.fill.secrets, "fill: Secrets in the cluster (BENCH_QUICK=1: 1000)")
	fs.IntVar(&o.fill.namespaces, "fill-namespaces", o.fill.namespaces, "fill: namespaces they are in (BENCH_QUICK=1: 10)")
	fs.StringVar(&o.fill.shape, "fill-shape", o.fill.shape, "fill: the objects' shape: "+
		shapeRealistic+" ("+fillOptions{shape: shapeRealistic}.describe()+") or "+shapeSmall+" ("+strings.TrimPrefix(fillOptions{shape: shapeSmall}.describe(), shapeSmall+": ")+")")
	fs.IntVar(&o.noisy.quiet, "quiet", o.noisy.quiet, "noisy: quiet tenants (BENCH_QUICK=1: 5)")
	fs.IntVar(&o.noisy.quietNamespaces, "quiet-namespaces", o.noisy.quietNamespaces, "noisy: namespaces each quiet tenant copies into")
	fs.DurationVar(&o.noisy.quietEvery, "quiet-every", o.noisy.quietEvery, "noisy: open-loop: every quiet tenant changes its source every this, whatever the latency of its earlier changes")
	fs.IntVar(&o.noisy.floorWaves, "floor-waves", o.noisy.floorWaves, "noisy: ticks of the quiet schedule with no flood (the floor): every quiet tenant changes once a tick")
	fs.IntVar(&o.noisy.flood, "flood", o.noisy.flood, "noisy: the flooding tenant's sources and Mirrors (BENCH_QUICK=1: 100)")
	fs.IntVar(&o.noisy.floodNamespaces, "flood-namespaces", o.noisy.floodNamespaces, "noisy: namespaces each flood Mirror copies into (BENCH_QUICK=1: 5)")
	fs.IntVar(&o.noisy.burstUpdates, "burst-updates", o.noisy.burstUpdates, "noisy: updates of every flood source in the burst")
	fs.IntVar(&o.memory.objects, "memory-objects", memoryObjects, "memory: ConfigMaps (two thirds) and Secrets (one third) in the cluster (BENCH_QUICK=1: 6000)")
	memoryMax := fs.Int64("memory-max", 4096, "memory: the measured run's cgroup limit, in `MiB`")
	precision := fs.Int64("memory-precision", 4, "memory: the bisection of the smallest limit survived stops at this interval, in `MiB`")
	fs.IntVar(&o.memory.steps, "memory-steps", 10, "memory: the bisection tries at most this many limits per implementation")
	fs.DurationVar(&o.memory.settle, "memory-settle", 10*time.Second, "memory: from ready to the steady-state reading")
	fs.StringVar(&o.memory.shape, "memory-shape", shapeRealistic, "memory: the fill objects' shape, "+strings.Join(shapes, " or ")+" (see -fill-shape)")
	fs.BoolVar(&o.memory.peerLimit, "memory-peer-gomemlimit", false, "memory: run controller-runtime's Mirrors with GOMEMLIMIT at 90% of their cgroup's limit, as opkit sets its own (default: none, as controller-runtime operators run)")
	implList := fs.String("impls", strings.Join(impls, ","), "implementations to run, in this order every round ("+crCM+", controller-runtime's watching ConfigMaps only, in the memory scenario only)")
	fs.StringVar(&o.out, "out", filepath.Join(root, "bench", "results"), "directory for the markdown table, the runs' JSON and the chart")
	fs.StringVar(&o.binDir, "bin", filepath.Join(root, "bin", "bench"), "directory for the binaries, the kubeconfig and the processes' logs")
	fs.StringVar(&o.from, "from", "", "report the runs in this `e2e-runs.json` of an earlier run instead of running")
	fs.StringVar(&o.opkitPkg, "opkit-pkg", "./cmd/sample-operator", "package to build as opkit's operator, for investigations")
	fs.BoolVar(&o.opkitPprof, "opkit-pprof", false, "opkit's operator serves /debug/pprof beside /metrics (cmd/sample-operator does not)")
	fs.StringVar(&o.pprofDir, "pprof", "", "write CPU and heap profiles of the operators that serve pprof into this `dir`")
	fs.IntVar(&o.pprofSeconds, "pprof-seconds", 30, "length of the CPU profile, from the start of the create phase; the run waits for it")
	fs.BoolVar(&o.warmup, "warmup", true, "run the bare client once first, unreported, to warm the control plane up")
	fs.DurationVar(&o.phaseTimeout, "phase-timeout", 10*time.Minute, "how long a phase may take to converge")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.scenarios, err = parseScenarios(*scenarioList); err != nil {
		return o, err
	}
	if o.memory.objects < 1 || *memoryMax < 1 || *precision < 1 || o.memory.steps < 1 || o.memory.settle < 0 {
		return o, fmt.Errorf("-memory-objects, -memory-max, -memory-precision and -memory-steps must be at least 1, -memory-settle not negative")
	}
	o.memory.max, o.memory.precision = *memoryMax<<20, *precision<<20
	if !slices.Contains(shapes, o.fill.shape) {
		return o, fmt.Errorf("-fill-shape: unknown shape %q (known: %s)", o.fill.shape, strings.Join(shapes, ", "))
	}
	if !slices.Contains(shapes, o.memory.shape) {
		return o, fmt.Errorf("-memory-shape: unknown shape %q (known: %s)", o.memory.shape, strings.Join(shapes, ", "))
	}
	o.impls = strings.Split(*implList, ",")
	for _, i := range o.impls {
		if !slices.Contains(impls, i) {
			return o, fmt.Errorf("-impls: unknown implementation %q", i)
		}
	}
	if o.namespaces < 1 || o.sources < 1 || o.rounds < 1 || o.workers < 1 {
		return o, fmt.Errorf("-namespaces, -sources, -rounds and -workers must be at least 1")
	}
	if min(o.fill.namespaces, o.noisy.quiet, o.noisy.quietNamespaces, o.noisy.floorWaves, o.noisy.flood, o.noisy.floodNamespaces, o.noisy.burstUpdates) < 1 {
		return o, fmt.Errorf("-fill-namespaces, -quiet, -quiet-namespaces, -floor-waves, -flood, -flood-namespaces and -burst-updates must be at least 1")
	}
	if o.noisy.quietEvery <= 0 {
		return o, fmt.Errorf("-quiet-every must be positive: the quiet schedule ticks every -quiet-every, got %v", o.noisy.quietEvery)
	}
	return o, nil
}

func run(ctx context.Context, args []string) error {
	root, err := repo.Root(".")
	if err != nil {
		return err
	}
	o, err := parse(args, root)
	if err != nil {
		return err
	}
	if o.from != "" {
		return reportFrom(o)
	}
	bins, err := build(ctx, root, o.binDir, o.opkitPkg)
	if err != nil {
		return err
	}
	logf("starting the control plane")
	env, err := testenv.Start(testenv.Options{CRDDirs: []string{filepath.Join(root, "config", "crd", "bases")}})
	if err != nil {
		return err
	}
	defer env.Stop()
	kubeconfig := filepath.Join(o.binDir, "e2e.kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	cfg := rest.CopyConfig(env.Config())
	cfg.QPS = -1
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// Without this, the first round's first Mirror create took 2s more
	// whenever the warm-up was off (see crdCreateHold).
	if err := waitCRDsSettled(ctx, dyn); err != nil {
		return err
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf" // the driver's polling lists cost the API server less
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	o.serverCPU = func(ctx context.Context) (float64, error) { return apiServerCPU(ctx, cs) }
	// opkit's operator reads sources and writes copies as each Mirror's
	// ServiceAccount: every one may, here, as a cluster's owners would
	// grant (docs/mirror-tenancy.md). The peers write as themselves.
	if err := mirrortest.GrantEveryServiceAccount(ctx, cs); err != nil {
		return err
	}

	titles := o.titles(time.Now())
	newWorkload := func(run string) *workload {
		return &workload{cs: cs, dyn: dyn, run: run, namespaces: o.namespaces, sources: o.sources, payload: strings.Repeat("x", o.payload)}
	}
	if o.warmup {
		// A fresh control plane answers the first run's requests markedly
		// slower than later ones': whichever implementation ran first
		// would pay for it.
		logf("warming the control plane up with a run of the bare client, not reported")
		if _, err := runOne(ctx, o, bare, bins[bare], kubeconfig, newWorkload("warmup")); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	var runs []runResult
	var runErr error
	for _, sc := range o.scenarios {
		if sc == scenarioMemory {
			scRuns, err := memoryScenario(ctx, o, cs, bins, kubeconfig, func(run string) *workload {
				return &workload{cs: cs, dyn: dyn, run: run, namespaces: memoryNamespaces, sources: memorySources, payload: strings.Repeat("x", o.payload)}
			})
			runs, runErr = append(runs, scRuns...), err
			if runErr != nil {
				break
			}
			continue
		}
		var newJob func(run string) job = func(run string) job { return newWorkload(run) }
		switch sc {
		case scenarioFill:
			if err := fillCluster(ctx, cs, o.fill); err != nil {
				runErr = err
			}
		case scenarioNoisy:
			newJob = func(run string) job {
				return newNoisy(cs, dyn, run, o.noisy, o.phaseTimeout, strings.Repeat("x", o.payload))
			}
		}
		if runErr == nil {
			var scRuns []runResult
			scRuns, runErr = runScenario(ctx, o, sc, bins, kubeconfig, newJob)
			runs = append(runs, scRuns...)
		}
		if sc == scenarioFill {
			runErr = errors.Join(runErr, unfill(ctx, cs, o.fill))
		}
		if runErr != nil {
			break
		}
	}
	if len(runs) > 0 {
		if err := report(o.out, titles, runs); err != nil {
			return err
		}
	}
	return runErr
}

// runScenario runs the rounds of scenario sc, implementations in
// alternation.
func runScenario(ctx context.Context, o options, sc string, bins map[string]string, kubeconfig string, newJob func(run string) job) ([]runResult, error) {
	var runs []runResult
	for round := 1; round <= o.rounds; round++ {
		for _, impl := range scenarioImpls(sc, o.impls) {
			name := fmt.Sprintf("r%d-%s", round, impl)
			if sc != scenarioOriginal {
				name = sc + "-" + name
			}
			r, err := runOne(ctx, o, impl, bins[impl], kubeconfig, newJob(name))
			if err != nil {
				return runs, fmt.Errorf("%s, round %d, %s: %w", sc, round, impl, err)
			}
			r.Round, r.Scenario = round, sc
			runs = append(runs, r)
			logRun(sc, r)
		}
	}
	return runs, nil
}

func logRun(sc string, r runResult) {
	if n := r.Noisy; n != nil {
		logf("%s round %d %-11s quiet p50/p99/max %.3f/%.3f/%.3fs (%d changes) with no flood, %.3f/%.3f/%.3fs (%d, issued %.0f/s) during the flood; flood create %.2fs, burst %.2fs; CPU %.2fs, peak RSS %.1f MiB",
			sc, r.Round, r.Impl, percentile(n.QuietFloor, 50), percentile(n.QuietFloor, 99), percentile(n.QuietFloor, 100), len(n.QuietFloor),
			percentile(n.QuietFlood, 50), percentile(n.QuietFlood, 99), percentile(n.QuietFlood, 100), len(n.QuietFlood), quietFloodRate(n),
			n.FloodCreateSeconds, n.FloodBurstSeconds, r.CPUSeconds, mib(r.PeakRSSBytes))
		return
	}
	logf("%s round %d %-11s create %6.2fs  update %6.2fs  CPU %6.2fs  peak RSS %6.1f MiB  ready %5.2fs  heap %6.1f MiB  requests %s, %.0f failed",
		sc, r.Round, r.Impl, r.CreateSeconds, r.UpdateSeconds, r.CPUSeconds, mib(r.PeakRSSBytes), r.ReadySeconds, mib(r.HeapAfterSyncBytes),
		formatRequests(r.Requests), r.failed())
}

// reportFrom reports the runs of an earlier e2e-runs.json; the titles take
// the workloads from the flags and the date from the file.
func reportFrom(o options) error {
	b, err := os.ReadFile(o.from)
	if err != nil {
		return err
	}
	fi, err := os.Stat(o.from)
	if err != nil {
		return err
	}
	var runs []runResult
	if err := json.Unmarshal(b, &runs); err != nil {
		return fmt.Errorf("read %s: %w", o.from, err)
	}
	return report(o.out, o.titles(fi.ModTime()), runs)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
}

// build builds the three programs into dir and returns their paths by
// implementation: opkit's operator in opkit's module at root, the peers in
// the benchmarks' module, hack/bench.
func build(ctx context.Context, root, dir, opkitPkg string) (map[string]string, error) {
	pkgs := map[string]string{opkit: opkitPkg, cr: "./crmirror", bare: "./baremirror"}
	dirs := map[string]string{opkit: root, cr: filepath.Join(root, "hack", "bench"), bare: filepath.Join(root, "hack", "bench")}
	bins := map[string]string{}
	for _, impl := range impls {
		if impl == noRYW || impl == self || impl == crCM {
			continue // opkit's or controller-runtime's binary, with a flag
		}
		bins[impl] = filepath.Join(dir, filepath.Base(pkgs[impl]))
		logf("building %s", pkgs[impl])
		// As deployed: the Dockerfile builds the operator with -tags
		// nolocal, which leaves out --local and the test control plane it
		// links.
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", "nolocal", "-o", bins[impl], pkgs[impl])
		cmd.Dir, cmd.Stdout, cmd.Stderr = dirs[impl], os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("build %s: %w", pkgs[impl], err)
		}
	}
	bins[noRYW] = bins[opkit]
	bins[self] = bins[opkit]
	bins[crCM] = bins[cr]
	return bins, nil
}

// job is one run's workload, which the implementation under test serves.
type job interface {
	name() string // unique per run, used in every name
	// exec writes the workload and waits for the operator p to converge,
	// recording the figures into res.
	exec(ctx context.Context, o options, p *process, res *runResult) error
	// clean deletes what exec created, the operator stopped.
	clean(ctx context.Context) error
}

// runOne runs one implementation through j, then cleans up. The bare
// client serves only a workload.
func runOne(ctx context.Context, o options, impl, bin, kubeconfig string, j job) (runResult, error) {
	res := runResult{Impl: impl}
	logPath := filepath.Join(o.binDir, "logs", j.name()+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return res, err
	}
	log, err := os.Create(logPath)
	if err != nil {
		return res, err
	}
	defer log.Close()
	var serverCPU float64
	if o.serverCPU != nil {
		if serverCPU, err = o.serverCPU(ctx); err != nil {
			return res, err
		}
	}
	var p *process
	if w, ok := j.(*workload); ok && res.Impl == bare {
		p, err = startBare(bin, kubeconfig, o.workers, w, log)
	} else if res.Impl == bare {
		err = fmt.Errorf("the bare client cannot run %T", j)
	} else {
		p, err = startOperator(bin, kubeconfig, o.workers, implArgs[impl], log, o.pprofDir != "" && (impl == cr || o.opkitPprof))
	}
	if err != nil {
		return res, err
	}
	err = p.waitReady(ctx, 5*time.Minute)
	if err == nil && p.healthAddr != "" {
		res.ReadySeconds = p.ready.Sub(p.started).Seconds()
		res.HeapAfterSyncBytes, err = p.heapInuse(ctx)
	}
	var profiled <-chan error
	if err == nil && p.pprofAddr != "" {
		profiled = p.profile(ctx, filepath.Join(o.pprofDir, j.name()), o.pprofSeconds)
	}
	if err == nil {
		err = j.exec(ctx, o, p, &res)
	}
	if profiled != nil {
		if perr := <-profiled; err == nil {
			err = perr
		}
	}
	if err == nil && o.serverCPU != nil {
		var c float64
		c, err = o.serverCPU(ctx)
		res.APIServerCPUSeconds = c - serverCPU
	}
	if err == nil {
		p.metricsCopy = strings.TrimSuffix(logPath, ".log") + ".metrics"
		res.Requests, res.Codes, err = p.requests(ctx)
	}
	if err == nil {
		res.PeakRSSBytes, err = p.peakRSS()
	}
	cpu, maxRSS, stopErr := p.stop()
	res.CPUSeconds = cpu
	if res.PeakRSSBytes == 0 {
		res.PeakRSSBytes = maxRSS
	}
	if err == nil && stopErr != nil {
		err = fmt.Errorf("stop %s (log: %s): %w", bin, logPath, stopErr)
	}
	if cleanErr := j.clean(ctx); err == nil {
		err = cleanErr
	}
	return res, err
}

func (w *workload) name() string { return w.run }

func (w *workload) exec(ctx context.Context, o options, p *process, res *runResult) error {
	return phases(ctx, o, p, w, res)
}

// phases creates the workload and waits for its copies, then updates the
// sources and waits for the copies to follow, timing each.
func phases(ctx context.Context, o options, p *process, w *workload, res *runResult) error {
	for v, phase := range []struct {
		seconds *float64
		write   func(context.Context) error
	}{
		{&res.CreateSeconds, w.create},
		{&res.UpdateSeconds, func(ctx context.Context) error { return w.update(ctx, 2) }},
	} {
		start := time.Now()
		if err := phase.write(ctx); err != nil {
			return err
		}
		if p.stdin != nil {
			if err := p.sync(); err != nil {
				return err
			}
		}
		if err := w.waitConverged(ctx, v+1, o.phaseTimeout); err != nil {
			return err
		}
		*phase.seconds = time.Since(start).Seconds()
	}
	return nil
}

// report prints a table per scenario and writes them, the runs and the
// chart into dir.
func report(dir string, titles map[string]string, runs []runResult) error {
	var md bytes.Buffer
	for _, sc := range scenarios {
		scRuns := ofScenario(runs, sc)
		if len(scRuns) == 0 {
			continue
		}
		title := titles[sc]
		if sc == scenarioMemory {
			title += memorySizes(scRuns)
		}
		d := scenarioDoc(sc, title, scRuns)
		if md.Len() > 0 {
			fmt.Println()
		}
		if err := printDoc(os.Stdout, d); err != nil {
			return err
		}
		if sc == scenarioMemory {
			// Every trial, a slow one among them, beside the table.
			fmt.Println()
			writeMemoryRuns(os.Stdout, scRuns)
		}
		d.title = "### " + d.title
		writeDoc(&md, d)
		writeRuns(&md, scRuns)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "e2e.md"), md.Bytes(), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(runs, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "e2e-runs.json"), js, 0o644); err != nil {
		return err
	}
	if err := writeChart(filepath.Join(dir, "e2e.png"), runs); err != nil {
		return err
	}
	logf("wrote %s/e2e.md, e2e-runs.json and e2e.png", dir)
	return nil
}
