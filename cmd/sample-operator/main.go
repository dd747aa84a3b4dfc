// Command sample-operator runs the Mirror operator: it copies a ConfigMap or
// Secret into every namespace that matches a selector (see package mirror).
//
//	sample-operator [flags]          run against the cluster kubectl would use
//	sample-operator --local [flags]  start a local control plane with sample
//	                                 Mirrors and run against it ('make run')
//
// With --shard-group the replicas share the Mirrors among themselves
// (docs/sharding.md); with --leader-elect one replica works and the others
// stand by.
//
// A namespace receives copies only if it accepts them (mirror.AcceptLabel);
// --allow-target-namespaces, --allow-secret-types and --max-targets widen
// or narrow what Mirrors may do (docs/mirror-tenancy.md).
//
// It serves the Mirror's webhooks on --webhook-port (9443; 0 turns them
// off) with certificates it manages itself or that are mounted
// (--webhook-certs; docs/webhooks.md lists the flags). It logs JSON to
// standard error and stops gracefully at SIGTERM or Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1beta1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/internal/actlog"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/tracing"
)

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=mirror-system
// (--shard-group needs list and delete on leases too: config/sharded adds them.)
// The secure /metrics (--metrics-secure) authenticates its callers with
// TokenReviews and authorizes them with SubjectAccessReviews; nothing
// else in the operator asks the API server about a caller.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

func main() {
	if err := run(manager.SignalContext(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "sample-operator: %v\n", err)
		os.Exit(1)
	}
}

// localPlane is the local control plane --local runs (pkg/testenv's), and
// the webhook flags that serve the webhooks it installed.
type localPlane struct {
	controlPlane
	webhook webhookFlags
}

// controlPlane is pkg/testenv's Environment, which a build with -tags
// nolocal leaves out.
type controlPlane interface {
	Config() *rest.Config
	Stop() error
}

// flags are the command line.
type flags struct {
	kubeconfig     string
	metricsAddr    string
	metricsSecure  bool
	healthAddr     string
	leader         leaderFlags
	workers        int
	verbosity      int
	readYourWrites bool
	local          bool
	localDir       string
	webhook        webhookFlags
	shard          shardFlags
	tenancy        tenancyFlags
	client         clientFlags
	recordFile     string
}

func parse(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("sample-operator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; defaults to KUBECONFIG, the pod's service account, then ~/.kube/config")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", `address of /metrics; "0" turns it off`)
	fs.BoolVar(&f.metricsSecure, "metrics-secure", false, "serve /metrics over HTTPS to tokens the API server authorizes for it")
	fs.StringVar(&f.healthAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz; "0" turns them off`)
	f.leader.register(fs)
	fs.IntVar(&f.workers, "max-concurrent-reconciles", 4, "Mirrors reconciled at once")
	fs.IntVar(&f.verbosity, "v", 0, "log verbosity: 0 or 1")
	fs.BoolVar(&f.readYourWrites, "read-your-writes", true, "wait, before reconciling a Mirror, until the cache holds the Mirror's own earlier writes (false: measure its cost)")
	fs.BoolVar(&f.local, "local", false, "start a local control plane with sample Mirrors and run against it")
	fs.StringVar(&f.localDir, "local-dir", "bin/run", "with --local: where to write the kubeconfig")
	f.webhook.register(fs)
	f.shard.register(fs)
	f.tenancy.register(fs)
	f.client.register(fs)
	fs.StringVar(&f.recordFile, "record-reconciles", "", "test aid: append a line to this file when each reconcile starts and ends and when each write request is sent (package internal/actlog); empty: none")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if f.local {
		if err := f.webhook.checkLocal(set); err != nil {
			return f, err
		}
	} else if err := f.webhook.check(set); err != nil {
		return f, err
	}
	if err := errors.Join(f.tenancy.check(), f.client.check()); err != nil {
		return f, err
	}
	switch {
	case fs.NArg() > 0:
		return f, fmt.Errorf("unexpected arguments %q: every option is a flag (see -h)", fs.Args())
	case f.workers < 1:
		return f, fmt.Errorf("--max-concurrent-reconciles is %d: it must be at least 1", f.workers)
	case f.verbosity < 0 || f.verbosity > 1:
		return f, fmt.Errorf("-v is %d: it must be 0 or 1", f.verbosity)
	case f.local && f.kubeconfig != "":
		return f, errors.New("--local and --kubeconfig exclude each other: --local runs its own control plane")
	case f.leader.elect && f.shard.group != "":
		return f, errors.New("--leader-elect and --shard-group exclude each other here: the Mirror controller is sharded, so every replica works whether it leads or not; use --shard-group to share the work, --leader-elect for one active replica")
	}
	return f, nil
}

// newLogger returns the operator's logger, JSON lines to stderr, and makes
// it client-go's (klog) and controller-runtime's too, so that their lines
// are in the same log. controller-runtime unset drops its webhook server's
// and certificate watcher's lines and, 30 seconds in, prints a stack trace
// saying so; it takes only the first logger a process sets.
func newLogger(stderr io.Writer, verbosity int) logr.Logger {
	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(stderr, obj) }, funcr.Options{Verbosity: verbosity, LogTimestamp: true})
	klog.SetLogger(log.WithName("client-go"))
	ctrllog.SetLogger(log)
	return log
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if f.local {
		// Before anything starts: the control plane and samples take
		// seconds, and a taken port would fail only after them.
		if err := checkFree(localListeners(f)); err != nil {
			return err
		}
	}
	log := newLogger(stderr, f.verbosity)

	var cfg *rest.Config
	if f.local {
		env, kubeconfig, err := startLocal(ctx, f.localDir, f.webhook.port, stdout)
		if err != nil {
			return err
		}
		f.webhook = env.webhook
		go seedMirror(ctx, env.Config(), log)
		defer func() {
			fmt.Fprintln(stdout, "Stopping the local control plane...")
			if err := errors.Join(env.Stop(), os.Remove(kubeconfig)); err != nil {
				log.Error(err, "Cannot stop the local control plane")
			}
		}()
		cfg = env.Config()
	} else if cfg, err = manager.Config(f.kubeconfig); err != nil {
		return err
	}
	cfg = rest.CopyConfig(cfg)
	f.client.apply(cfg)
	return operate(ctx, cfg, f, log)
}

func operate(ctx context.Context, cfg *rest.Config, f flags, log logr.Logger) error {
	policy, err := f.tenancy.policy(podNamespaceFile)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme), v1beta1.AddToScheme(scheme)); err != nil {
		return err
	}
	// Traces go where the OTEL_* variables say (docs/tracing.md); none by default.
	tp, stopTracing, err := tracing.FromEnv(ctx)
	if err != nil {
		return fmt.Errorf("configure tracing from the OTEL_* variables: %w", err)
	}
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(flushCtx); err != nil {
			log.Error(err, "Cannot flush the last traces")
		}
	}()
	ctrlOpts := controller.Options[reconcile.Request]{
		MaxConcurrentReconciles: f.workers,
	}
	if !f.readYourWrites {
		ctrlOpts.ReadYourWritesTimeout = -1 // off
	}
	mgrCfg := cfg
	if f.recordFile != "" {
		acts, err := actlog.Open(f.recordFile)
		if err != nil {
			return err
		}
		defer acts.Close()
		ctrlOpts.TracerProvider = spanRecorder{acts: acts}
		// The first wrapper sits closest to the wire: the manager's own
		// wrap it, so a write they refuse is never recorded.
		mgrCfg = rest.CopyConfig(cfg)
		mgrCfg.Wrap(acts.Transport)
	}
	mgr, err := manager.New(mgrCfg, manager.Options{
		Sharding:       f.shard.options(),
		Scheme:         scheme,
		Logger:         log,
		TracerProvider: tp,
		LeaderElection: f.leader.options(),
		Metrics:        manager.MetricsOptions{BindAddress: f.metricsAddr, Secure: f.metricsSecure},
		Health:         manager.HealthOptions{BindAddress: f.healthAddr},
		Webhook:        f.webhook.options(),
	})
	if err != nil {
		return f.leader.inFlagWords(f.shard.inFlagWords(err))
	}
	if err := registerWebhooks(mgr, mirror.SetupWebhooks); err != nil {
		return err
	}
	if _, err := mirror.Setup(mgr, policy, ctrlOpts); err != nil {
		return err
	}
	stopCerts, err := startCertificates(ctx, cfg, mgr, f.webhook, log)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it began
		}
		return err
	}
	defer stopCerts()
	log.Info("Starting the Mirror operator", "cluster", cfg.Host, "leaderElection", f.leader.elect, "shardGroup", f.shard.group, "webhookPort", f.webhook.port, "webhookCerts", f.webhook.certs,
		"operatorNamespace", policy.OperatorNamespace, "allowTargetNamespaces", policy.AllowNamespaces, "allowSecretTypes", policy.SecretTypes, "maxTargets", policy.MaxTargets)
	return mgr.Start(ctx)
}
