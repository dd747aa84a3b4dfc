package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
	"sigs.k8s.io/multicluster-runtime/providers/clusters"
)

// The flood's workload, as pkg/fleet's BenchmarkFlood runs it.
const (
	floodQuietRate = 10 // updates a second, each quiet member
	floodKeys      = 200
	floodQuietKeys = 20
	floodWork      = 12 * time.Millisecond
	floodRun       = 8 * time.Second
	floodAt        = "bench.opkit.dev/at"
)

// floodResult is what mcrcost prints with -flood-factor.
type floodResult struct {
	QuietP99Seconds            float64 `json:"quietP99Seconds"`
	QuietWritesPerSecondMember float64 `json:"quietWritesPerSecondMember"`
	FloodWritesPerSecond       float64 `json:"floodWritesPerSecond"`
	QuietReconciles            int     `json:"quietReconciles"`
}

// flood runs pkg/fleet's BenchmarkFlood workload on multicluster-runtime:
// each namespace a cluster, the last flooding at factor times the quiet
// rate, through one controller of one worker (multicluster-runtime's
// default, with its default queue) whose reconciles read the object from
// the cluster's cache and take floodWork; it returns the quiet clusters'
// p99 latency from an update's write to the start of its reconcile. The
// namespaces hold cm-0..cm-N already.
func flood(cfg *rest.Config, namespaces []string, factor int) (floodResult, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, err := mcmanager.New(cfg, clusters.New(), mcmanager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return floodResult{}, fmt.Errorf("make the manager: %w", err)
	}
	flooding := namespaces[len(namespaces)-1]
	var mu sync.Mutex
	var latencies []time.Duration
	var reconciles atomic.Int64
	engaged := map[string]cluster.Cluster{} // written before the first engagement
	for _, ns := range namespaces {
		cl, err := cluster.New(cfg, func(o *cluster.Options) { o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}} })
		if err != nil {
			return floodResult{}, fmt.Errorf("make cluster %s: %w", ns, err)
		}
		engaged[ns] = cl
	}
	r := mcreconcile.Func(func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
		start := time.Now()
		reconciles.Add(1)
		// The clusters provider does not know the clusters engaged
		// directly (see run), so mgr.GetCluster would not find them.
		cl, ok := engaged[req.ClusterName]
		if !ok {
			return ctrl.Result{}, fmt.Errorf("cluster %q not engaged", req.ClusterName)
		}
		var cm corev1.ConfigMap
		if err := cl.GetClient().Get(ctx, req.NamespacedName, &cm); err != nil {
			return ctrl.Result{}, nil
		}
		if at, err := strconv.ParseInt(cm.Annotations[floodAt], 10, 64); err == nil && req.ClusterName != flooding {
			mu.Lock()
			latencies = append(latencies, start.Sub(time.Unix(0, at)))
			mu.Unlock()
		}
		time.Sleep(floodWork)
		return ctrl.Result{}, nil
	})
	err = mcbuilder.ControllerManagedBy(mgr).Named("flood").For(&corev1.ConfigMap{}).
		WithOptions(controller.TypedOptions[mcreconcile.Request]{MaxConcurrentReconciles: 1}).Complete(r)
	if err != nil {
		return floodResult{}, fmt.Errorf("make the controller: %w", err)
	}
	errs := make(chan error, 1)
	go func() { errs <- mgr.Start(ctx) }()
	if !mgr.GetLocalManager().GetCache().WaitForCacheSync(ctx) {
		return floodResult{}, fmt.Errorf("the manager's cache did not sync")
	}
	time.Sleep(time.Second) // the manager's runnables start after its cache syncs
	for _, ns := range namespaces {
		cl := engaged[ns]
		go func() { _ = cl.Start(ctx) }() // before it is engaged: see run
		if err := mgr.Engage(ctx, ns, cl); err != nil {
			return floodResult{}, fmt.Errorf("engage cluster %s: %w", ns, err)
		}
		if !cl.GetCache().WaitForCacheSync(ctx) {
			return floodResult{}, fmt.Errorf("cluster %s did not sync", ns)
		}
	}
	// The initial lists' keys (every object, once) are reconciled before
	// the writes begin, so that that backlog does not count.
	initial := int64(floodQuietKeys*(len(namespaces)-1) + floodKeys)
	for deadline := time.Now().Add(5 * time.Minute); reconciles.Load() < initial; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return floodResult{}, fmt.Errorf("%d of the initial %d keys reconciled", reconciles.Load(), initial)
		}
	}
	// The writers, as BenchmarkFlood's, unthrottled: the API server's
	// priority and fairness is the limit.
	wcfg := rest.CopyConfig(cfg)
	wcfg.QPS = -1
	cs, err := kubernetes.NewForConfig(wcfg)
	if err != nil {
		return floodResult{}, err
	}
	res, err := driveAll(ctx, cs, namespaces, factor)
	if err != nil {
		return floodResult{}, err
	}
	select {
	case err := <-errs:
		return floodResult{}, fmt.Errorf("the manager stopped: %v", err)
	default:
	}
	mu.Lock()
	defer mu.Unlock()
	if len(latencies) < 10 {
		return floodResult{}, fmt.Errorf("%d quiet reconciles measured, %d reconciles in all", len(latencies), reconciles.Load())
	}
	slices.Sort(latencies)
	res.QuietP99Seconds = latencies[len(latencies)*99/100].Seconds()
	res.QuietReconciles = len(latencies)
	return res, nil
}

// driveAll writes to the namespaces for floodRun, as BenchmarkFlood does.
func driveAll(ctx context.Context, cs kubernetes.Interface, namespaces []string, factor int) (floodResult, error) {
	run, stop := context.WithTimeout(ctx, floodRun)
	defer stop()
	quiet := len(namespaces) - 1
	var wg sync.WaitGroup
	var quietWrites, floodWrites atomic.Int64
	errs := make(chan error, len(namespaces)+4)
	begin := time.Now()
	for i, ns := range namespaces {
		if i < quiet {
			wg.Go(func() { errs <- drive(run, cs, ns, floodQuietRate, 0, floodQuietKeys, &quietWrites) })
			continue
		}
		writers := 1
		if factor > 1 {
			writers = 4
		}
		for w := range writers {
			wg.Go(func() {
				errs <- drive(run, cs, ns, floodQuietRate*factor/writers, w*floodKeys/writers, floodKeys/writers, &floodWrites)
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return floodResult{}, err
		}
	}
	elapsed := time.Since(begin).Seconds()
	return floodResult{
		QuietWritesPerSecondMember: float64(quietWrites.Load()) / elapsed / float64(quiet),
		FloodWritesPerSecond:       float64(floodWrites.Load()) / elapsed,
	}, nil
}

// drive updates keys from..from+keys-1 of ns, round-robin, rate a second
// until ctx ends, each with its write time, counting the writes in n.
func drive(ctx context.Context, cs kubernetes.Interface, ns string, rate, from, keys int, n *atomic.Int64) error {
	t := time.NewTicker(time.Second / time.Duration(rate))
	defer t.Stop()
	cms := cs.CoreV1().ConfigMaps(ns)
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(from+i%keys),
			Annotations: map[string]string{floodAt: strconv.FormatInt(time.Now().UnixNano(), 10)}}}
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			if ctx.Err() == nil {
				return fmt.Errorf("update %s/%s: %w", ns, cm.Name, err)
			}
			return nil
		}
		n.Add(1)
	}
}
