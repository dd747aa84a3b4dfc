// Command replica is one replica of test/fleetsharding's sharded fleet:
// the namespaces labelled fleet-sharding=<--label> are its members, shared
// out among the replicas of --group by Lease slots; in each member it owns
// it copies the ConfigMap "source" to "copy". It records in --record (the
// format of package internal/actlog) each reconcile's start and end, each
// write it sends to a member, and each member it engages and disengages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/opkit-dev/opkit/internal/actlog"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

type flags struct {
	kubeconfig, label, record, metricsAddr string
	sharding                               fleet.ShardingOptions
}

func main() {
	var f flags
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "the API server: hub and members (namespaces as members)")
	fs.StringVar(&f.label, "label", "", "members are the namespaces labelled fleet-sharding=<label>")
	fs.StringVar(&f.record, "record", "", "the record file (package internal/actlog)")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "127.0.0.1:0", "where /metrics is served")
	fs.String("health-probe-bind-address", "", "ignored: test/internal/operators passes it")
	fs.StringVar(&f.sharding.Namespace, "shard-namespace", "", "namespace of the Leases")
	fs.StringVar(&f.sharding.Group, "shard-group", "", "the replicas' group")
	fs.StringVar(&f.sharding.Identity, "shard-identity", "", "this replica's identity")
	fs.IntVar(&f.sharding.Slots, "shard-slots", 16, "slots")
	fs.DurationVar(&f.sharding.LeaseDuration, "shard-lease-duration", 4*time.Second, "lease duration")
	fs.DurationVar(&f.sharding.RenewDeadline, "shard-renew-deadline", 3*time.Second, "renew deadline")
	fs.DurationVar(&f.sharding.RetryPeriod, "shard-retry-period", 500*time.Millisecond, "retry period")
	_ = fs.Parse(os.Args[1:])
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, f); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f flags) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return err
	}
	acts, err := actlog.Open(f.record)
	if err != nil {
		return err
	}
	defer acts.Close()
	log := logr.New(recordingSink{LogSink: funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) }, funcr.Options{Verbosity: 1}).GetSink(), acts: acts})
	members := rest.CopyConfig(cfg)
	members.Wrap(acts.Transport) // closest to the wire: what the fleet lets through
	f.sharding.Config = cfg
	reg := prometheus.NewRegistry()
	fl, err := fleet.New(fleet.Options{
		Providers: []fleet.Provider{fleet.Namespaces{Config: members, Selector: labels.SelectorFromSet(labels.Set{"fleet-sharding": f.label})}},
		Logger:    log, Registerer: reg, Sharding: &f.sharding,
	})
	if err != nil {
		return err
	}
	cms, err := fleet.Register[*corev1.ConfigMap](fl, cache.TypeOptions{})
	if err != nil {
		return err
	}
	ctl, err := controller.New[fleet.Request]("copier", fleet.Reconciler(fl, copier{cms: cms, acts: acts}), controller.Options[fleet.Request]{
		Tenant: fleet.Request.Tenant, MaxConcurrentReconciles: 4, Logger: log,
	})
	if err != nil {
		return err
	}
	if err := ctl.Watch(fleet.Watch(cms, fleet.EnqueueObject[*corev1.ConfigMap]())); err != nil {
		return err
	}
	l, err := net.Listen("tcp", f.metricsAddr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Go(func() { errs <- ignoreClosed(srv.Serve(l)) })
	wg.Go(func() { errs <- fl.Start(ctx) })
	wg.Go(func() { errs <- ctl.Start(ctx) })
	<-ctx.Done()
	_ = srv.Close()
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// copier copies "source" to "copy" in each member, recording each
// reconcile; its writes carry the copy's resourceVersion.
type copier struct {
	cms  *fleet.Lister[*corev1.ConfigMap]
	acts *actlog.File
}

func (c copier) Reconcile(ctx context.Context, req fleet.Request) (reconcile.Result, error) {
	key := req.Cluster + "/" + req.Namespace + "/" + req.Name
	c.acts.Start(key, time.Now())
	defer c.acts.End(key)
	if req.Name != "source" {
		return reconcile.Done(), nil
	}
	member := fleet.ClusterFrom(ctx)
	l, err := c.cms.In(req.Cluster)
	if err != nil {
		return reconcile.Done(), err
	}
	src, err := l.Get(req.Namespace, "source")
	if apierrors.IsNotFound(err) {
		return reconcile.Done(), nil
	}
	if err != nil {
		return reconcile.Done(), err
	}
	cp, err := l.Get(req.Namespace, "copy")
	switch {
	case apierrors.IsNotFound(err):
		return reconcile.Done(), member.Client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: "copy"}, Data: src.Data})
	case err != nil:
		return reconcile.Done(), err
	case cp.Data["v"] == src.Data["v"]:
		return reconcile.Done(), nil
	}
	next := cp.DeepCopy()
	next.Data = src.Data
	return reconcile.Done(), member.Client().Update(ctx, next)
}

// recordingSink records the fleet's "Member cluster engaged" and
// "Member cluster disengaged" as own and disown lines: logged under the
// fleet's lock, before any reconcile of the member can begin.
type recordingSink struct {
	logr.LogSink
	acts *actlog.File
}

func (s recordingSink) Info(level int, msg string, kv ...any) {
	switch msg {
	case "Member cluster engaged":
		s.acts.Own(cluster(kv))
	case "Member cluster disengaged":
		s.acts.Disown(cluster(kv))
	}
	s.LogSink.Info(level, msg, kv...)
}

func (s recordingSink) WithValues(kv ...any) logr.LogSink {
	return recordingSink{LogSink: s.LogSink.WithValues(kv...), acts: s.acts}
}

func (s recordingSink) WithName(name string) logr.LogSink {
	return recordingSink{LogSink: s.LogSink.WithName(name), acts: s.acts}
}

func cluster(kv []any) string {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "cluster" {
			if s, ok := kv[i+1].(string); ok {
				return s
			}
		}
	}
	return "?"
}
