// Command crmirror runs the Mirror controller of cmd/sample-operator on
// controller-runtime instead of opkit, for the end-to-end benchmark
// (hack/bench/e2e): the same mirror.Reconciler, reading through a
// mirror.Store over controller-runtime's cache, wired with controller-runtime's
// builder the way cmd/sample-operator/mirror's Setup wires it on opkit's
// manager, with the same flags, worker count and REST client settings.
//
//	crmirror --kubeconfig FILE [--metrics-bind-address ADDR] [--health-probe-bind-address ADDR]
//	         [--max-concurrent-reconciles N] [--pprof-bind-address ADDR]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
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
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q: every option is a flag (see -h)", fs.Args())
	}
	if f.workers < 1 {
		return f, fmt.Errorf("--max-concurrent-reconciles is %d: it must be at least 1", f.workers)
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

	mgr, err := newManager(cfg, f, log)
	if err != nil {
		return err
	}
	log.Info("Starting the Mirror operator (controller-runtime)", "cluster", cfg.Host)
	return mgr.Start(ctx)
}

func newManager(cfg *rest.Config, f flags, log logr.Logger) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress: f.healthAddr,
		PprofBindAddress:       f.pprofAddr,
		// As opkit's cache does by default: nothing reads managedFields, and
		// a production operator caching every ConfigMap and Secret drops
		// them to save memory.
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
	if err != nil {
		return nil, fmt.Errorf("create the manager: %w", err)
	}
	if err := setup(mgr, f.workers); err != nil {
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
// opkit's manager.
func setup(mgr ctrl.Manager, workers int) error {
	if err := indexFields(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("set up the mirror controller: %w", err)
	}
	s := store{r: mgr.GetCache()}
	r := &mirror.Reconciler{Store: s, Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("mirror")}
	return ctrl.NewControllerManagedBy(mgr).
		Named("mirror").
		For(&v1alpha1.Mirror{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{},
			predicate.Funcs{UpdateFunc: deletionStarted},
		))).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(s.mirrorsOf)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(s.mirrorsOf)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(s.mirrorsSelecting)).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: workers}).
		Complete(adapter{r})
}

// deletionStarted passes the update that sets a deletion timestamp;
// predicate.Funcs passes every other event, and predicate.Or lets
// GenerationChangedPredicate decide those.
func deletionStarted(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
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
