// Command crmirror runs the Mirror controller of cmd/sample-operator on
// controller-runtime instead of opkit, for the end-to-end benchmark
// (hack/bench/e2e): the same mirror.Reconciler, reading through a
// mirror.Store over controller-runtime's cache, wired with controller-runtime's
// builder the way cmd/sample-operator/mirror's Setup wires it on opkit's
// manager, with the same flags, worker count and REST client settings.
//
//	crmirror --kubeconfig FILE [--metrics-bind-address ADDR] [--health-probe-bind-address ADDR]
//	         [--max-concurrent-reconciles N] [--pprof-bind-address ADDR]
//	         [--leader-elect [--leader-election-namespace NS] [--leader-election-id NAME]
//	          [--leader-elect-lease-duration D] [--leader-elect-renew-deadline D] [--leader-elect-retry-period D]]
//	         [--record-reconciles FILE] [--kube-api-qps N [--kube-api-burst N]]
//	         [--configmaps-only]
//
// With --leader-elect one replica works and the others stand by, as with
// the sample's flag of that name; test/sharding freezes the leader of two
// to compare what each does after a standby took over. --record-reconciles
// records reconciles and writes in the sample's format (package
// internal/actlog). --kube-api-qps and --kube-api-burst limit the requests
// of all its clients together with one token bucket, as the sample's
// flags of those names do; controller-runtime's leader election renews
// through clients built from the same config, so through that bucket too. It counts, in
// crmirror_list_requests_total by resource, the requests that fetch a
// resource's whole state (lists, and watches that send initial events),
// so that a test can count its informers' relists.
//
// --configmaps-only makes it the leaner peer of the memory benchmark: it
// watches and caches ConfigMaps alone, no Secret, so it mirrors ConfigMap
// sources only (a Secret source is refused). Without it, it caches every
// ConfigMap and Secret in full, as the sample watches both.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/internal/actlog"
)

func main() {
	if err := run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "crmirror: %v\n", err)
		os.Exit(1)
	}
}

type flags struct {
	metricsAddr string
	healthAddr  string
	pprofAddr   string
	workers     int
	verbosity   int
	leader      leaderFlags
	recordFile  string
	qps         float64
	burst       int
	// configMapsOnly: watch ConfigMaps alone, no Secret (see store).
	configMapsOnly bool
}

// leaderFlags are the sample's leader election flags, for
// controller-runtime's manager.Options.
type leaderFlags struct {
	elect         bool
	namespace     string
	name          string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
}

func (l *leaderFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&l.elect, "leader-elect", false, "run only while holding a Lease: one active replica and warm standbys")
	fs.StringVar(&l.namespace, "leader-election-namespace", "", "namespace of the Lease; defaults to the pod's")
	fs.StringVar(&l.name, "leader-election-id", "mirror-operator", "name of the Lease")
	fs.DurationVar(&l.leaseDuration, "leader-elect-lease-duration", 0, "with --leader-elect: how long a standby waits after the leader last renewed before it takes over; 0: controller-runtime's default (15s)")
	fs.DurationVar(&l.renewDeadline, "leader-elect-renew-deadline", 0, "with --leader-elect: how long the leader tries to renew before it gives the Lease up; 0: controller-runtime's default (10s)")
	fs.DurationVar(&l.retryPeriod, "leader-elect-retry-period", 0, "with --leader-elect: the time between tries to acquire or renew the Lease; 0: controller-runtime's default (2s)")
}

// apply sets o's leader election fields. Like the sample, it releases the
// Lease on a graceful stop.
func (l leaderFlags) apply(o *ctrl.Options) {
	o.LeaderElection, o.LeaderElectionNamespace, o.LeaderElectionID = l.elect, l.namespace, l.name
	o.LeaderElectionReleaseOnCancel = true
	for _, d := range []struct {
		flag time.Duration
		opt  **time.Duration
	}{{l.leaseDuration, &o.LeaseDuration}, {l.renewDeadline, &o.RenewDeadline}, {l.retryPeriod, &o.RetryPeriod}} {
		if d.flag > 0 {
			*d.opt = &d.flag
		}
	}
}

func parse(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("crmirror", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config.RegisterFlags(fs) // --kubeconfig, read by ctrl.GetConfig
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", `address of /metrics; "0" turns it off`)
	fs.StringVar(&f.healthAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz; "0" turns them off`)
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "0", `address of /debug/pprof; "0" turns it off`)
	fs.IntVar(&f.workers, "max-concurrent-reconciles", 4, "Mirrors reconciled at once")
	fs.IntVar(&f.verbosity, "v", 0, "log verbosity: 0 or 1")
	f.leader.register(fs)
	fs.StringVar(&f.recordFile, "record-reconciles", "", "test aid: append a line to this file when each reconcile starts and ends and when each write request is sent (package internal/actlog); empty: none")
	fs.Float64Var(&f.qps, "kube-api-qps", 0, "requests a second the client may send to the API server; 0: no client-side limit")
	fs.IntVar(&f.burst, "kube-api-burst", 0, "with --kube-api-qps: requests the client may send at once above that rate; 0: --kube-api-qps rounded up")
	fs.BoolVar(&f.configMapsOnly, "configmaps-only", false, "watch and cache ConfigMaps only, no Secret: mirror ConfigMap sources only (the memory benchmark's leaner peer)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q: every option is a flag (see -h)", fs.Args())
	}
	if f.workers < 1 {
		return f, fmt.Errorf("--max-concurrent-reconciles is %d: it must be at least 1", f.workers)
	}
	if f.qps < 0 || math.IsNaN(f.qps) || math.IsInf(f.qps, 0) || f.burst < 0 || (f.burst > 0 && f.qps == 0) {
		return f, errors.New("--kube-api-qps must be 0 (no limit) or positive, and --kube-api-burst 0 or positive, with --kube-api-qps")
	}
	if l := f.leader; l.leaseDuration < 0 || l.renewDeadline < 0 || l.retryPeriod < 0 {
		return f, errors.New("the --leader-elect-* durations must be 0 (the default) or positive")
	}
	return f, nil
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	f, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	// The same logger as cmd/sample-operator's, at the same verbosity.
	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(stderr, obj) }, funcr.Options{Verbosity: f.verbosity, LogTimestamp: true})
	klog.SetLogger(log.WithName("client-go"))
	ctrl.SetLogger(log)

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	// opkit's manager.Config and ctrl.GetConfig both turn client-side rate
	// limiting off when the kubeconfig sets no QPS; say so here, so that the
	// benchmark's two operators visibly share the setting.
	cfg.QPS, cfg.Burst = -1, 0
	if f.qps > 0 {
		// One bucket for every client built from cfg, as the sample's
		// flags give; controller-runtime's leader election builds its
		// clients from cfg too, so its renewals spend it as well.
		cfg.QPS, cfg.Burst = float32(f.qps), f.burst
		if cfg.Burst == 0 {
			cfg.Burst = int(math.Ceil(f.qps))
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}

	var acts *actlog.File
	if f.recordFile != "" {
		if acts, err = actlog.Open(f.recordFile); err != nil {
			return err
		}
		defer acts.Close()
		// The first wrapper, closest to the wire, as in the sample.
		cfg.Wrap(acts.Transport)
	}
	lists, err := newListCounter(ctrlmetrics.Registry)
	if err != nil {
		return err
	}
	cfg.Wrap(lists.wrap)
	mgr, err := newManager(cfg, f, acts, log)
	if err != nil {
		return err
	}
	log.Info("Starting the Mirror operator (controller-runtime)", "cluster", cfg.Host, "leaderElection", f.leader.elect)
	return mgr.Start(ctx)
}

// newManager returns the manager with the Mirror controller; acts, when
// not nil, records its reconciles.
func newManager(cfg *rest.Config, f flags, acts *actlog.File, log logr.Logger) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	opts := ctrl.Options{
		Scheme:                 scheme,
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress: f.healthAddr,
		PprofBindAddress:       f.pprofAddr,
		// As opkit's cache does by default: nothing reads managedFields, and
		// a production operator caching every ConfigMap and Secret drops
		// them to save memory.
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	}
	f.leader.apply(&opts)
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("create the manager: %w", err)
	}
	if err := setup(mgr, f.workers, f.configMapsOnly, acts); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	// Ready once the informers have synced, as opkit's /readyz is.
	if err := mgr.AddReadyzCheck("informers", cacheSynced(mgr.GetCache())); err != nil {
		return nil, err
	}
	return mgr, nil
}

// setup adds the Mirror controller to mgr, as mirror.Setup adds it to
// opkit's manager, watching no Secret if configMapsOnly; acts, when not
// nil, records its reconciles.
func setup(mgr ctrl.Manager, workers int, configMapsOnly bool, acts *actlog.File) error {
	s := store{r: mgr.GetCache(), configMapsOnly: configMapsOnly}
	if err := s.indexFields(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("set up the mirror controller: %w", err)
	}
	mr := &mirror.Reconciler{Store: s, Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("mirror")}
	var r reconcile.Reconciler = finalizing{r: adapter{mr}, store: s, client: mgr.GetClient(), cleanup: mr.Cleanup}
	if acts != nil {
		r = recorded{r: r, acts: acts}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("mirror").
		// The update that starts a deletion raises the generation
		// (TestGenerationRisesWhenDeletionStarts in pkg/source).
		For(&v1alpha1.Mirror{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(s.mirrorsOf))
	if !configMapsOnly {
		b = b.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(s.mirrorsOf))
	}
	return b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(s.mirrorsSelecting)).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// cacheSynced is a readiness check that passes once every informer the
// cache started has synced.
func cacheSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("informers not synced")
		}
		return nil
	}
}
