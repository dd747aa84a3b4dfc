// Command e2e is opkit's end-to-end benchmark: the Mirror operator of
// cmd/sample-operator run on opkit, the same reconciler run on
// controller-runtime (hack/bench/crmirror), and a bare client writing the
// same objects (hack/bench/baremirror), one at a time as their own
// processes against one control plane, in alternation for several rounds.
//
// Each run creates N namespaces and M source ConfigMaps with Mirrors that
// select all the namespaces, waits until the API server holds the N×M
// copies, then updates every source and waits until every copy follows.
// It records the wall time of both phases, the operator process's CPU
// seconds, peak RSS and API requests by method, and prints the medians and
// opkit's ratios to its peers against their targets; it writes the table
// as markdown, every run as JSON and a chart of every run as PNG into -out.
//
//	go run ./hack/bench/e2e                # 50 namespaces × 40 sources, 5 rounds
//	BENCH_QUICK=1 go run ./hack/bench/e2e  # 10 × 10, 1 round
package main

import (
	"bytes"
	"context"
	"encoding/json"
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
	o := options{namespaces: 50, sources: 40, rounds: 5}
	if quick {
		o = options{namespaces: 10, sources: 10, rounds: 1}
	}
	fs := flag.NewFlagSet("e2e", flag.ContinueOnError)
	fs.IntVar(&o.namespaces, "namespaces", o.namespaces, "namespaces each Mirror selects (BENCH_QUICK=1: 10)")
	fs.IntVar(&o.sources, "sources", o.sources, "source ConfigMaps, each with a Mirror (BENCH_QUICK=1: 10)")
	fs.IntVar(&o.rounds, "rounds", o.rounds, "runs of each implementation, in alternation (BENCH_QUICK=1: 1)")
	fs.IntVar(&o.workers, "workers", 4, "--max-concurrent-reconciles of every implementation")
	fs.IntVar(&o.payload, "payload", 1024, "bytes of payload in every source")
	implList := fs.String("impls", strings.Join(impls, ","), "implementations to run, in this order every round")
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
	o.impls = strings.Split(*implList, ",")
	for _, i := range o.impls {
		if !slices.Contains(impls, i) {
			return o, fmt.Errorf("-impls: unknown implementation %q", i)
		}
	}
	if o.namespaces < 1 || o.sources < 1 || o.rounds < 1 || o.workers < 1 {
		return o, fmt.Errorf("-namespaces, -sources, -rounds and -workers must be at least 1")
	}
	return o, nil
}

func run(ctx context.Context, args []string) error {
	root, err := testenv.ModuleRoot(".")
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

	title := o.title(time.Now())
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
	for round := 1; round <= o.rounds && runErr == nil; round++ {
		for _, impl := range o.impls {
			r, err := runOne(ctx, o, impl, bins[impl], kubeconfig, newWorkload(fmt.Sprintf("r%d-%s", round, impl)))
			if err != nil {
				runErr = fmt.Errorf("round %d, %s: %w", round, impl, err)
				break
			}
			r.Round = round
			runs = append(runs, r)
			logf("round %d %-11s create %6.2fs  update %6.2fs  CPU %6.2fs  peak RSS %6.1f MiB  requests %s, %.0f failed",
				round, impl, r.CreateSeconds, r.UpdateSeconds, r.CPUSeconds, float64(r.PeakRSSBytes)/(1<<20), formatRequests(r.Requests), r.failed())
		}
	}
	if len(runs) > 0 {
		if err := report(o.out, title, runs); err != nil {
			return err
		}
	}
	return runErr
}

func (o options) title(date time.Time) string {
	return fmt.Sprintf("Mirror end to end: %d namespaces × %d sources = %d copies, then %d updates; %d workers; %d round(s); %s",
		o.namespaces, o.sources, o.namespaces*o.sources, o.namespaces*o.sources, o.workers, o.rounds, date.UTC().Format("2006-01-02"))
}

// reportFrom reports the runs of an earlier e2e-runs.json; the title takes
// the workload from the flags and the date from the file.
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
	return report(o.out, o.title(fi.ModTime()), runs)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
}

// build builds the three programs into dir and returns their paths by
// implementation.
func build(ctx context.Context, root, dir, opkitPkg string) (map[string]string, error) {
	pkgs := map[string]string{opkit: opkitPkg, cr: "./hack/bench/crmirror", bare: "./hack/bench/baremirror"}
	bins := map[string]string{}
	for _, impl := range impls {
		if impl == noRYW {
			continue // opkit's binary, with a flag
		}
		bins[impl] = filepath.Join(dir, filepath.Base(pkgs[impl]))
		logf("building %s", pkgs[impl])
		// As deployed: the Dockerfile builds the operator with -tags
		// nolocal, which leaves out --local and the test control plane it
		// links.
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", "nolocal", "-o", bins[impl], pkgs[impl])
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("build %s: %w", pkgs[impl], err)
		}
	}
	bins[noRYW] = bins[opkit]
	return bins, nil
}

// runOne runs one implementation through both phases of w, then cleans up.
func runOne(ctx context.Context, o options, impl, bin, kubeconfig string, w *workload) (runResult, error) {
	res := runResult{Impl: impl}
	logPath := filepath.Join(o.binDir, "logs", w.run+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return res, err
	}
	log, err := os.Create(logPath)
	if err != nil {
		return res, err
	}
	defer log.Close()
	var p *process
	if res.Impl == bare {
		p, err = startBare(bin, kubeconfig, o.workers, w, log)
	} else {
		p, err = startOperator(bin, kubeconfig, o.workers, implArgs[impl], log, o.pprofDir != "" && (impl == cr || o.opkitPprof))
	}
	if err != nil {
		return res, err
	}
	err = p.waitReady(ctx, 2*time.Minute)
	var profiled <-chan error
	if err == nil && p.pprofAddr != "" {
		profiled = p.profile(ctx, filepath.Join(o.pprofDir, w.run), o.pprofSeconds)
	}
	if err == nil {
		err = phases(ctx, o, p, w, &res)
	}
	if profiled != nil {
		if perr := <-profiled; err == nil {
			err = perr
		}
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
	if cleanErr := w.clean(ctx); err == nil {
		err = cleanErr
	}
	return res, err
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

// report prints the table and writes it, the runs and the chart into dir.
func report(dir, title string, runs []runResult) error {
	if err := printTable(os.Stdout, title, runs); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := writeMarkdown(&md, "### "+title, runs); err != nil {
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
