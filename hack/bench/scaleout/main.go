// Command scaleout is opkit's scale-out benchmark: the same operator
// (hack/bench/scaleout/operator, opkit's manager in sharded mode) run as
// one replica and as three, real processes sharing one local control
// plane started with the ShardedListAndWatch gate on, in alternation for
// several rounds. Each reconcile waits on a slow external dependency, a
// loopback HTTP server this program runs (-delay a call, 50ms), then
// records its work with one patch, so that the dependency, not the API
// server, bounds the replicas: 2 workers × 20 calls/s each. At 20ms, three
// replicas keep two cores about 70% busy and the API server's latency
// grows into every reconcile; docs/performance.md has the figures of both.
//
// A round of R replicas creates -objects converged ConfigMaps (in one
// namespace, sharded by UID; with -skewed, in 100 namespaces whose sizes
// fall off as 1/rank^0.8, sharded by namespace), starts the replicas and
// waits until their membership has settled (every replica ready, seeing R
// members, the slots held once), then:
//
//   - warm-up: changes every object -warmup times (once) and waits for
//     the slots to rest, so that replicas balancing by load
//     (-balance-half-life; by default 0, which balances by count) have measured their
//     slots and swapped them;
//   - throughput: changes every object -changes times (once), one write
//     each, and times until every object has converged: objects
//     converged per second, and the dependency calls it took. How the
//     calls split between the replicas, and the CPU the machine, the API
//     server and the replicas spent, say what bounded the phase;
//     The busiest replica's time is taken apart: how long after the first
//     write it first called the dependency and how long before the end
//     it last did, its workers' time per call between the two, and of
//     that its reconcile time and its PATCH round trip (the replicas'
//     controller_runtime_reconcile_time_seconds and
//     rest_client_request_duration_seconds), so that a ratio short of
//     1/its share shows where the time went. With -profile DIR, CPU
//     profiles of the API server and of every replica over the phase's
//     first -profile-for, and every replica's heap profiles after the
//     settle and at the end, are written into DIR;
//   - memory: each replica's go_memstats_heap_inuse_bytes after the
//     settle and after the throughput phase, and its heap allocated right
//     after a garbage collection it is made to run then (the live heap,
//     which does not depend on where in its collection cycle a replica
//     was). Every ConfigMap in the cluster is cached, -fill already
//     converged ones among them;
//   - kill (R > 1 only): changes every object once more and, with half
//     of those writes done, SIGKILLs one replica; times from the kill
//     until the others hold all its slots, which includes the lease
//     running out on their clocks, and until every object has converged.
//
// The driver learns of convergence from a watch of the objects, not by
// listing them, so that it loads the API server no more than a replica.
//
// With -capacity 1,2,...,8 it measures instead, for each replica count,
// the largest rate of changes (round-robin over the objects) that every
// replica serves within the objective timebertt's
// kubernetes-controller-sharding is measured under (p99 of queue waits
// ≤ 1s and of reconciles ≤ 5s), by bisection over -probes rates of
// -window each, and prints the curve beside timebertt's published one.
//
// It prints the medians (and ranges) of both replica counts and their
// ratios against the targets as a table, and writes it as markdown, with
// every round as JSON, into -out.
//
//	go -C hack/bench run ./scaleout                # full sizes (see -h), 3 rounds
//	BENCH_QUICK=1 go -C hack/bench run ./scaleout  # small sizes, 1 round
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/hack/bench/internal/repo"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

type options struct {
	objects, changes, fill, payload int
	rounds, workers, replicas       int
	delay                           time.Duration
	lease, renew, retry             time.Duration
	phaseTimeout                    time.Duration
	out, binDir                     string
	// balance is the replicas' Options.Sharding.Balance.HalfLife; 0
	// balances by count alone.
	balance time.Duration
	// warmup is how many times every object changes before the timed
	// phase, for the replicas to measure their slots' loads.
	warmup int
	// verbosity is the replicas' klog -v: 1 logs the slots each gains and
	// releases, for an investigation of a round's moves.
	verbosity int
	// trace has each replica write a line per reconcile beside its log
	// (tracePath), and the report give the timed phase's reconcile times.
	trace bool
	// skewed places the objects in namespaces of Zipf-like sizes, sharded
	// by namespace (layout).
	skewed bool
	// clientFilter makes the replicas filter their slots themselves
	// rather than send shard selectors (cache.ServerFilterOff).
	clientFilter bool
	// capacity, when set, lists the replica counts whose capacity under
	// the objective is measured instead of the throughput rounds, by
	// probes of window each.
	capacity []int
	probes   int
	window   time.Duration
	// profile, when set, is the directory that receives CPU profiles of
	// the API server and of every replica over the first profileFor of
	// each throughput phase.
	profile    string
	profileFor time.Duration
}

// slots is the replicas' Options.Sharding.Slots, the manager's default.
const slots = manager.DefaultSlots

// shardGate is the kube-apiserver feature gate of server-side shard
// selectors: on where the API server has it, so that a cache of split
// informers uses them.
const shardGate = "ShardedListAndWatch"

// filterFor returns o with the replicas filtering their slots themselves
// (-client-side-filter) when env's API server has no shard selectors (a
// version older than the gate), saying so, so that the report names the
// filter the replicas used.
func filterFor(o options, env *testenv.Environment) options {
	if on, _ := env.FeatureGate(shardGate); !on && !o.clientFilter {
		logf("kube-apiserver %s has no %s: the replicas filter their slots themselves (-client-side-filter)", env.ServerVersion(), shardGate)
		o.clientFilter = true
	}
	return o
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "scaleout: %v\n", err)
		os.Exit(1)
	}
}

func parse(args []string, root string) (options, error) {
	quick := os.Getenv("BENCH_QUICK") != "" && os.Getenv("BENCH_QUICK") != "0"
	o := options{objects: 1800, changes: 1, fill: 3000, rounds: 3}
	if quick {
		o = options{objects: 120, changes: 1, fill: 600, rounds: 1}
	}
	fs := flag.NewFlagSet("scaleout", flag.ContinueOnError)
	fs.IntVar(&o.objects, "objects", o.objects, "ConfigMaps the replicas reconcile (BENCH_QUICK=1: 120); fewer make the replicas' shares of them, hashed into slots, less even")
	fs.IntVar(&o.changes, "changes", o.changes, "changes of every object in the throughput phase; more than one are coalesced less by a faster operator, which then calls the dependency more often")
	fs.IntVar(&o.fill, "fill", o.fill, "converged ConfigMaps cached beside them, for the heap figures (BENCH_QUICK=1: 600)")
	fs.IntVar(&o.payload, "payload", 1024, "bytes of payload in every filler ConfigMap")
	fs.IntVar(&o.rounds, "rounds", o.rounds, "rounds, each one replica then -replicas replicas (BENCH_QUICK=1: 1)")
	fs.IntVar(&o.workers, "workers", 2, "MaxConcurrentReconciles of every replica")
	fs.IntVar(&o.replicas, "replicas", 3, "replicas compared with one")
	fs.DurationVar(&o.delay, "delay", 50*time.Millisecond, "how long the dependency takes to answer a call")
	fs.DurationVar(&o.lease, "lease-duration", 4*time.Second, "the replicas' Options.Sharding.LeaseDuration")
	fs.DurationVar(&o.renew, "renew-deadline", 3*time.Second, "the replicas' Options.Sharding.RenewDeadline")
	fs.DurationVar(&o.retry, "retry-period", 500*time.Millisecond, "the replicas' Options.Sharding.RetryPeriod")
	fs.DurationVar(&o.balance, "balance-half-life", 0, "the replicas' Options.Sharding.Balance.HalfLife, such as 1m; 0 (the default, as the SDK's) balances the slots by count")
	fs.IntVar(&o.warmup, "warmup", 1, "changes of every object before the throughput phase, for the replicas to measure their slots' loads and rebalance")
	fs.BoolVar(&o.trace, "trace", false, "have each replica write a line per reconcile (its start in Unix ns, its duration in ns, its key) to its log's path with .trace added, and report how long the timed phase's reconciles took early and late in it")
	fs.IntVar(&o.verbosity, "replica-v", 0, "the replicas' log verbosity (klog -v); 1 logs every slot each replica gains and releases, in <bin>/bench/logs")
	fs.BoolVar(&o.skewed, "skewed", false, "place the objects in 100 namespaces whose sizes fall off as 1/rank^0.8 (the largest 12%), sharded by namespace, instead of one namespace sharded by UID")
	fs.BoolVar(&o.clientFilter, "client-side-filter", false, "the replicas never send shard selectors: each receives every ConfigMap and keeps its slots' (cache.ServerFilterOff)")
	capacity := fs.String("capacity", "", "replica counts, such as 1,2,3,4,5,6,7,8, whose capacity under the objective (p99 queue ≤ 1s, reconcile ≤ 5s) to measure instead of the throughput rounds")
	fs.IntVar(&o.probes, "probes", 6, "-capacity: churn rates tried per replica count, by bisection")
	fs.DurationVar(&o.window, "window", 15*time.Second, "-capacity: how long each rate is measured, after a ramp of a third of it")
	fs.StringVar(&o.profile, "profile", "", "directory for CPU profiles of the API server and every replica over the first -profile-for of each throughput phase (go tool pprof reads them)")
	fs.DurationVar(&o.profileFor, "profile-for", 8*time.Second, "-profile: how long each profile lasts")
	fs.DurationVar(&o.phaseTimeout, "phase-timeout", 10*time.Minute, "how long a phase may take to converge")
	fs.StringVar(&o.out, "out", filepath.Join(root, "bench", "results"), "directory for the markdown table and the rounds' JSON")
	fs.StringVar(&o.binDir, "bin", filepath.Join(root, "bin", "bench"), "directory for the operator binary, the kubeconfig and the replicas' logs")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if *capacity != "" {
		for _, f := range strings.Split(*capacity, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > slots {
				return o, fmt.Errorf("-capacity %q: want replica counts from 1 to %d separated by commas", *capacity, slots)
			}
			o.capacity = append(o.capacity, n)
		}
		if o.probes < 1 || o.window <= 0 {
			return o, errors.New("-probes must be at least 1 and -window above 0")
		}
	}
	if o.objects < 2 || o.changes < 1 || o.fill < 0 || o.rounds < 1 || o.workers < 1 || o.replicas < 2 || o.warmup < 0 || o.balance < 0 {
		return o, errors.New("-objects must be at least 2, -changes, -rounds and -workers at least 1, -replicas at least 2, -fill, -warmup and -balance-half-life not negative")
	}
	if !(o.retry > 0 && o.retry < o.renew && o.renew < o.lease) {
		return o, fmt.Errorf("want 0 < -retry-period < -renew-deadline < -lease-duration, got %v, %v, %v", o.retry, o.renew, o.lease)
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
	logf("starting the control plane with %s on where it has it", shardGate)
	env, err := testenv.Start(testenv.Options{OptionalFeatureGates: map[string]bool{shardGate: true}})
	if err != nil {
		return err
	}
	defer env.Stop()
	o = filterFor(o, env)
	return bench(ctx, o, root, env)
}

// bench builds the operator, runs the rounds against env and reports them.
func bench(ctx context.Context, o options, root string, env *testenv.Environment) error {
	bin := filepath.Join(o.binDir, "scaleout-operator")
	logf("building ./hack/bench/scaleout/operator")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./scaleout/operator")
	cmd.Dir, cmd.Stdout, cmd.Stderr = filepath.Join(root, "hack", "bench"), os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build the operator: %w", err)
	}
	kubeconfig := filepath.Join(o.binDir, "scaleout.kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	cfg := rest.CopyConfig(env.Config())
	cfg.QPS, cfg.ContentType = -1, "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dep, err := startDependency(o.delay)
	if err != nil {
		return err
	}
	defer dep.stop()
	logf("filling the cluster with %d converged ConfigMaps", o.fill)
	if err := createAll(ctx, cs, fillRun, func(int) string { return fillNamespace }, o.fill, payloadOf(o.payload)); err != nil {
		return err
	}
	d := &driver{o: o, cs: cs, dep: dep, bin: bin, kubeconfig: kubeconfig, layout: newLayout(o.skewed, o.objects)}
	if o.capacity != nil {
		return errors.Join(d.capacities(ctx), deleteRun(ctx, cs, fillRun, fillNamespace))
	}
	var runs []roundResult
	var runErr error
	for round := 1; round <= o.rounds && runErr == nil; round++ {
		for _, n := range []int{1, o.replicas} {
			r, err := d.round(ctx, round, n)
			if err != nil {
				runErr = fmt.Errorf("round %d, %d replicas: %w", round, n, err)
				break
			}
			logRound(r)
			runs = append(runs, r)
		}
	}
	runErr = errors.Join(runErr, deleteRun(ctx, cs, fillRun, fillNamespace))
	if len(runs) > 0 {
		if err := report(o, runs); err != nil {
			return errors.Join(runErr, err)
		}
	}
	return runErr
}

func logRound(r roundResult) {
	kill := ""
	if r.Replicas > 1 {
		kill = fmt.Sprintf(", the killed replica's slots claimed %.2fs, every slot held %.2fs and objects converged %.2fs after a kill", r.DeadSlotsSeconds, r.TakeoverSeconds, r.KillSeconds)
	}
	logf("round %d, %d replicas: %d objects converged in %.2fs (%.1f/s; writes %.2fs), %d dependency calls (busiest replica %.3f: first call %.2fs in, %.1fms a call of which %.1fms reconciling and %.1fms a patch, last %.2fs before the end), machine %.0f%% busy, CPU s API server %.1f, replicas %.1f; heap after sync %s MiB, at end %s MiB, live after sync %s MiB, at end %s MiB%s",
		r.Round, r.Replicas, r.Objects, r.Seconds, r.PerSecond, r.WriteSeconds, r.DependencyCalls, r.BusiestShare, r.HeadSeconds, r.CallMillis, r.ReconcileMillis, r.PatchMillis, r.TailSeconds, 100*r.CPU.MachineBusy, r.CPU.APIServerSeconds, r.CPU.ReplicaSeconds, mibs(r.HeapAfterSync), mibs(r.HeapAtEnd), mibs(r.LiveAfterSync), mibs(r.LiveAtEnd), kill)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scaleout: "+format+"\n", args...)
}
