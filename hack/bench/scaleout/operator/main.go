// Command operator is the scale-out benchmark's operator (see
// hack/bench/scaleout): opkit's manager in sharded mode reconciling
// ConfigMaps labelled scaleout.opkit.dev/run. A reconcile of a ConfigMap
// whose data "gen" differs from its annotation scaleout.opkit.dev/done
// calls the slow dependency at --dependency once (with its key and the
// process ID, by which the benchmark counts each replica's share), then
// records the generation in the annotation with one merge patch that
// carries the resourceVersion read as a precondition. Every ConfigMap of the cluster
// is cached: the benchmark reads the heap that costs (with --pprof, which
// the benchmark sets, after making the replica collect its garbage
// through /debug/pprof/heap?gc=1).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// The names the benchmark driver shares with the operator.
const (
	runLabel = "scaleout.opkit.dev/run"
	doneKey  = "scaleout.opkit.dev/done"
	genKey   = "gen"
)

type flags struct {
	kubeconfig, metricsAddr, healthAddr, dependency string
	group, leaseNamespace, identity                 string
	workers, memProfileRate                         int
	lease, renew, retry, balance                    time.Duration
	byNamespace, clientFilter, pprof                bool
	trace                                           string
}

func main() {
	var f flags
	flag.StringVar(&f.kubeconfig, "kubeconfig", "", "path to a kubeconfig")
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", "127.0.0.1:0", "where /metrics is served")
	flag.StringVar(&f.healthAddr, "health-probe-bind-address", "127.0.0.1:0", "where /readyz is served")
	flag.StringVar(&f.dependency, "dependency", "", "URL of the slow dependency each reconcile calls once")
	flag.StringVar(&f.group, "group", "scaleout", "the replicas' shard group")
	flag.StringVar(&f.leaseNamespace, "lease-namespace", "default", "namespace of the replicas' Leases")
	flag.StringVar(&f.identity, "identity", "", "Options.Sharding.Identity: this replica's name in the group (its Lease is <group>-<identity>); empty for the manager's default")
	flag.IntVar(&f.workers, "max-concurrent-reconciles", 2, "workers of the controller")
	flag.DurationVar(&f.lease, "lease-duration", 4*time.Second, "Options.Sharding.LeaseDuration")
	flag.DurationVar(&f.renew, "renew-deadline", 3*time.Second, "Options.Sharding.RenewDeadline")
	flag.DurationVar(&f.retry, "retry-period", 500*time.Millisecond, "Options.Sharding.RetryPeriod")
	flag.DurationVar(&f.balance, "balance-half-life", 0, "Options.Sharding.Balance.HalfLife; 0 balances the slots by count alone")
	flag.BoolVar(&f.byNamespace, "shard-by-namespace", false, "shard the ConfigMaps by namespace rather than by UID")
	flag.BoolVar(&f.clientFilter, "client-side-filter", false, "never send shard selectors: every replica receives every ConfigMap and keeps its slots' (cache.ServerFilterOff)")
	flag.BoolVar(&f.pprof, "pprof", false, "serve net/http/pprof beside /metrics")
	flag.IntVar(&f.memProfileRate, "mem-profile-rate", 0, "runtime.MemProfileRate, bytes allocated per heap profile sample; 0 keeps Go's 512 KiB")
	flag.StringVar(&f.trace, "trace", "", "a file to write one line per reconcile to: its start (Unix ns), its duration (ns) and its key")
	klog.InitFlags(nil) // -v: the manager logs through klog
	flag.Parse()
	if err := run(f); err != nil {
		fmt.Fprintf(os.Stderr, "operator: %v\n", err)
		os.Exit(1)
	}
}

func run(f flags) error {
	if f.memProfileRate > 0 {
		runtime.MemProfileRate = f.memProfileRate
	}
	if f.dependency == "" {
		return errors.New("--dependency is empty: give the URL of the slow dependency")
	}
	cfg, err := manager.Config(f.kubeconfig)
	if err != nil {
		return err
	}
	filter := cache.ServerFilterDetect
	if f.clientFilter {
		filter = cache.ServerFilterOff
	}
	mgr, err := manager.New(cfg, manager.Options{
		Cache: cache.Options{Sharding: cache.ShardingOptions{ServerFilter: filter}},
		Sharding: manager.ShardingOptions{Enabled: true, Group: f.group, Namespace: f.leaseNamespace, Identity: f.identity,
			LeaseDuration: f.lease, RenewDeadline: f.renew, RetryPeriod: f.retry,
			Balance: manager.BalanceOptions{Enabled: f.balance > 0, HalfLife: f.balance}},
		Metrics: manager.MetricsOptions{BindAddress: f.metricsAddr, Pprof: f.pprof},
		Health:  manager.HealthOptions{BindAddress: f.healthAddr},
	})
	if err != nil {
		return err
	}
	r := &reconciler{client: mgr.UncachedClient(), dependency: f.dependency,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: f.workers}}}
	if f.trace != "" {
		// Unbuffered: a replica the benchmark SIGKILLs loses no line.
		if r.trace, err = os.Create(f.trace); err != nil {
			return err
		}
		defer r.trace.Close()
	}
	// A reconcile started before the renew deadline must end within
	// LeaseDuration - RenewDeadline for the sharded mode's guarantee.
	opts := controller.Options[reconcile.Request]{MaxConcurrentReconciles: f.workers, ReconcileTimeout: f.lease - f.renew}
	key := sharding.ByUID
	if f.byNamespace {
		key = sharding.ByNamespace
	}
	if _, err := manager.NewController(mgr, "scaleout", reconcile.Func[reconcile.Request](r.reconcile),
		// The controller's own registration, split: each replica caches
		// only its slots' ConfigMaps.
		manager.For(&r.configMaps), manager.ShardBy(key), manager.WithOptions(opts)); err != nil {
		return err
	}
	return mgr.Start(manager.SignalContext())
}

type reconciler struct {
	configMaps *cache.Lister[*corev1.ConfigMap]
	client     client.Client
	http       *http.Client
	dependency string
	// trace, if not nil, gets a line per reconcile (--trace); mu orders
	// the lines.
	trace *os.File
	mu    sync.Mutex
}

func (r *reconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if r.trace != nil {
		defer r.traced(req, time.Now())
	}
	cm, err := r.configMaps.Get(req.Namespace, req.Name)
	if apierrors.IsNotFound(err) {
		return reconcile.Done(), nil
	}
	if err != nil {
		return reconcile.Done(), fmt.Errorf("get configmap %s: %w", req, err)
	}
	gen, ok := cm.Data[genKey]
	if _, labelled := cm.Labels[runLabel]; !labelled || !ok || cm.Annotations[doneKey] == gen {
		return reconcile.Done(), nil
	}
	if err := r.call(ctx, req); err != nil {
		return reconcile.Done(), err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": cm.ResourceVersion, "annotations": map[string]string{doneKey: gen}}})
	if err != nil {
		return reconcile.Done(), err
	}
	out := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name}}
	if err := r.client.Patch(ctx, out, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return reconcile.Done(), fmt.Errorf("record generation %s of configmap %s: %w", gen, req, err)
	}
	return reconcile.Done(), nil
}

// traced writes a trace line for a reconcile of req begun at began.
func (r *reconciler) traced(req reconcile.Request, began time.Time) {
	took := time.Since(began)
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.trace, "%d %d %s\n", began.UnixNano(), took.Nanoseconds(), req)
}

// call asks the slow dependency about req, once.
func (r *reconciler) call(ctx context.Context, req reconcile.Request) error {
	q := url.Values{"key": {req.String()}, "replica": {strconv.Itoa(os.Getpid())}}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, r.dependency+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := r.http.Do(hr)
	if err != nil {
		return fmt.Errorf("call the dependency for %s: %w", req, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("call the dependency for %s: %s", req, resp.Status)
	}
	return nil
}
