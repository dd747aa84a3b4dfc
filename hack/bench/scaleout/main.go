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
// A round of R replicas creates -objects converged ConfigMaps, starts the
// replicas and waits until their membership has settled (every replica
// ready, seeing R members, the slots held once), then:
//
//   - throughput: changes every object -changes times (once), one write
//     each, and times until every object has converged: objects
//     converged per second, and the dependency calls it took. How the
//     calls split between the replicas, and the CPU the machine, the API
//     server and the replicas spent, say what bounded the phase;
//   - memory: each replica's go_memstats_heap_inuse_bytes after the
//     settle and after the throughput phase. Every ConfigMap in the
//     cluster is cached, -fill already converged ones among them;
//   - kill (R > 1 only): changes every object once more and, with half
//     of those writes done, SIGKILLs one replica; times from the kill
//     until the others hold all its slots, which includes the lease
//     running out on their clocks, and until every object has converged.
//
// The driver learns of convergence from a watch of the objects, not by
// listing them, so that it loads the API server no more than a replica.
//
// It prints the medians (and ranges) of both replica counts and their
// ratios against the targets as a table, and writes it as markdown, with
// every round as JSON, into -out.
//
//	go run ./hack/bench/scaleout                # full sizes (see -h), 3 rounds
//	BENCH_QUICK=1 go run ./hack/bench/scaleout  # small sizes, 1 round
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
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
}

// slots is the replicas' Options.Sharding.Slots, the manager's default.
const slots = manager.DefaultSlots

// shardGate is the kube-apiserver feature gate of server-side shard
// selectors: on, so that a cache of split informers uses them.
const shardGate = "ShardedListAndWatch"

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
	fs.DurationVar(&o.phaseTimeout, "phase-timeout", 10*time.Minute, "how long a phase may take to converge")
	fs.StringVar(&o.out, "out", filepath.Join(root, "bench", "results"), "directory for the markdown table and the rounds' JSON")
	fs.StringVar(&o.binDir, "bin", filepath.Join(root, "bin", "bench"), "directory for the operator binary, the kubeconfig and the replicas' logs")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.objects < 2 || o.changes < 1 || o.fill < 0 || o.rounds < 1 || o.workers < 1 || o.replicas < 2 {
		return o, errors.New("-objects must be at least 2, -changes, -rounds and -workers at least 1, -replicas at least 2, -fill not negative")
	}
	if !(o.retry > 0 && o.retry < o.renew && o.renew < o.lease) {
		return o, fmt.Errorf("want 0 < -retry-period < -renew-deadline < -lease-duration, got %v, %v, %v", o.retry, o.renew, o.lease)
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
	logf("starting the control plane with %s on", shardGate)
	env, err := testenv.Start(testenv.Options{FeatureGates: map[string]bool{shardGate: true}})
	if err != nil {
		return err
	}
	defer env.Stop()
	return bench(ctx, o, root, env)
}

// bench builds the operator, runs the rounds against env and reports them.
func bench(ctx context.Context, o options, root string, env *testenv.Environment) error {
	bin := filepath.Join(o.binDir, "scaleout-operator")
	logf("building ./hack/bench/scaleout/operator")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./hack/bench/scaleout/operator")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
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
	if err := createAll(ctx, cs, fillRun, fillNamespace, o.fill, payloadOf(o.payload)); err != nil {
		return err
	}
	d := &driver{o: o, cs: cs, dep: dep, bin: bin, kubeconfig: kubeconfig}
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
		kill = fmt.Sprintf(", slots taken over %.2fs and objects converged %.2fs after a kill", r.TakeoverSeconds, r.KillSeconds)
	}
	logf("round %d, %d replicas: %d objects converged in %.2fs (%.1f/s; writes %.2fs), %d dependency calls (busiest replica %.3f), machine %.0f%% busy, CPU s API server %.1f, replicas %.1f; heap after sync %s MiB, at end %s MiB%s",
		r.Round, r.Replicas, r.Objects, r.Seconds, r.PerSecond, r.WriteSeconds, r.DependencyCalls, r.BusiestShare, 100*r.CPU.MachineBusy, r.CPU.APIServerSeconds, r.CPU.ReplicaSeconds, mibs(r.HeapAfterSync), mibs(r.HeapAtEnd), kill)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scaleout: "+format+"\n", args...)
}
