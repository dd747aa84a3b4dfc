// Command fleet is an example fleet operator (package pkg/fleet): it
// copies the hub's policies, ConfigMaps labelled
// fleet.examples.opkit.dev/copy=true in the hub's policy namespace, into
// every namespace labelled fleet.examples.opkit.dev/accept=true of every
// member cluster, keeps the copies in step, and deletes them when the
// policy or the namespace's opt-in goes. Its members are the kubeconfigs
// in the Secrets of the hub's members namespace (fleet.KubeconfigSecrets).
//
//	fleet [--kubeconfig HUB] [--members-namespace fleet-system] [--policy-namespace fleet-policies]
//	fleet --local [--members 2] [--local-dir bin/run-fleet]
//
// --local starts a hub and members of its own on this machine, with
// sample objects, and prints the kubectl commands to look at each cluster:
// 'make run-fleet' runs it. See README.md for a walk-through.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/manager"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "fleet: %v\n", err)
		os.Exit(1)
	}
}

// globalLoggers sets klog's and controller-runtime's loggers, once.
var globalLoggers sync.Once

type flags struct {
	kubeconfig       string
	membersNamespace string
	policyNamespace  string
	metricsAddr      string
	verbosity        int
	local            bool
	members          int
	localDir         string
}

func parse(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "the hub's kubeconfig; defaults to KUBECONFIG, the pod's service account, then ~/.kube/config")
	fs.StringVar(&f.membersNamespace, "members-namespace", "fleet-system", "the hub namespace whose Secrets hold the members' kubeconfigs (key kubeconfig)")
	fs.StringVar(&f.policyNamespace, "policy-namespace", "fleet-policies", "the hub namespace whose ConfigMaps labelled "+LabelCopy+"=true are copied")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "0", `address of /metrics; "0" turns it off`)
	fs.IntVar(&f.verbosity, "v", 0, "log verbosity: 0 or 1")
	fs.BoolVar(&f.local, "local", false, "start a hub and members on this machine, with sample objects, and run against them")
	fs.IntVar(&f.members, "members", 2, "with --local: how many members to start")
	fs.StringVar(&f.localDir, "local-dir", "bin/run-fleet", "with --local: where to write the clusters' kubeconfigs")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	switch {
	case fs.NArg() > 0:
		return f, fmt.Errorf("unexpected arguments %q: every option is a flag (see -h)", fs.Args())
	case f.verbosity < 0 || f.verbosity > 1:
		return f, fmt.Errorf("-v is %d: it must be 0 or 1", f.verbosity)
	case f.local && f.kubeconfig != "":
		return f, errors.New("--local and --kubeconfig exclude each other: --local runs its own hub")
	case f.local && (f.members < 1 || f.members > maxLocalMembers):
		return f, fmt.Errorf("--members is %d: it must be between 1 and %d", f.members, maxLocalMembers)
	}
	return f, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(stderr, obj) }, funcr.Options{Verbosity: f.verbosity, LogTimestamp: true})
	// client-go's and controller-runtime's lines go to the same log. Their
	// loggers are the process's, set once: a second run in one process (a
	// test's) would race with the first's informers still logging.
	globalLoggers.Do(func() {
		klog.SetLogger(log.WithName("client-go"))
		ctrllog.SetLogger(log)
	})

	var hub *rest.Config
	if f.local {
		l, err := startLocal(ctx, f.localDir, f.members, f.membersNamespace, f.policyNamespace)
		if err != nil {
			return err
		}
		defer func() {
			fmt.Fprintln(stdout, "Stopping the hub and the members...")
			if err := l.stop(); err != nil {
				log.Error(err, "Cannot stop the local clusters")
			}
		}()
		l.printWalkthrough(stdout)
		hub = l.hub.Config()
	} else if hub, err = manager.Config(f.kubeconfig); err != nil {
		return err
	}
	return operate(ctx, hub, f, log)
}

// operate runs the operator against the hub until ctx ends.
func operate(ctx context.Context, hub *rest.Config, f flags, log logr.Logger) error {
	mgr, err := manager.New(hub, manager.Options{Logger: log, Metrics: manager.MetricsOptions{BindAddress: f.metricsAddr}})
	if err != nil {
		return err
	}
	fl, err := fleet.New(fleet.Options{
		Providers: []fleet.Provider{fleet.KubeconfigSecrets{
			Config:    mgr.Config(),
			Namespace: f.membersNamespace,
			Logger:    log.WithName("members"),
		}},
		Logger:     log.WithName("fleet"),
		Registerer: mgr.Registry(),
	})
	if err != nil {
		return err
	}
	if err := Setup(mgr, fl, f.policyNamespace); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
