// Command mcrcost measures what an engaged cluster costs
// sigs.k8s.io/multicluster-runtime, for pkg/fleet's BenchmarkCostPerMember
// to print beside opkit's. It engages each namespace it is given as a
// cluster (a controller-runtime cluster.Cluster whose cache holds that
// namespace, started and then engaged, as its kubeconfig provider does)
// under one
// multicluster manager with a controller for each of ConfigMaps, Secrets
// and ServiceAccounts, waits until every cluster has synced the three,
// and prints the goroutines and live heap each cluster added as JSON.
// Given a kubeconfig per namespace, it engages each namespace on its own
// API server.
//
// With -flood-factor it runs pkg/fleet's BenchmarkFlood workload instead
// (flood.go).
//
// It is a module of its own because multicluster-runtime v0.22 builds
// only against controller-runtime v0.22, where opkit is on v0.25.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
	"sigs.k8s.io/multicluster-runtime/providers/clusters"
)

// result is what mcrcost prints.
type result struct {
	Clusters             int     `json:"clusters"`
	GoroutinesPerCluster float64 `json:"goroutinesPerCluster"`
	HeapBytesPerCluster  float64 `json:"heapBytesPerCluster"`
}

// kubeconfigs is the flag -api-kubeconfig, given once or once per
// namespace.
type kubeconfigs []string

func (k *kubeconfigs) String() string { return strings.Join(*k, ",") }

func (k *kubeconfigs) Set(v string) error { *k = append(*k, v); return nil }

func main() {
	var kubeconfig kubeconfigs
	flag.Var(&kubeconfig, "api-kubeconfig", "an API server's kubeconfig (controller-runtime takes -kubeconfig): once, for every namespace, or once per namespace, in their order, each namespace a cluster on its own API server")
	namespaces := flag.String("namespaces", "", "a file of the namespaces to engage, one a line")
	factor := flag.Int("flood-factor", 0, "if set, run pkg/fleet's BenchmarkFlood workload instead, the last namespace flooding at this many times the others' rate, and print the quiet clusters' p99 latency")
	flag.Parse()
	log.SetLogger(logr.Discard()) // quiet, and no "SetLogger was never called"
	var res any
	var err error
	if *factor > 0 {
		res, err = runFlood(kubeconfig, *namespaces, *factor)
	} else {
		res, err = run(kubeconfig, *namespaces)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcrcost:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "mcrcost:", err)
		os.Exit(1)
	}
}

// configs returns the config of each namespace's cluster: one
// kubeconfig for all, or one each.
func configs(kubeconfig []string, namespaces []string) ([]*rest.Config, error) {
	if len(kubeconfig) != 1 && len(kubeconfig) != len(namespaces) {
		return nil, fmt.Errorf("%d kubeconfigs for %d namespaces: give one, or one per namespace", len(kubeconfig), len(namespaces))
	}
	cfgs := make([]*rest.Config, len(namespaces))
	for i := range cfgs {
		k := kubeconfig[0]
		if len(kubeconfig) > 1 {
			k = kubeconfig[i]
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", k)
		if err != nil {
			return nil, err
		}
		cfgs[i] = cfg
	}
	return cfgs, nil
}

func runFlood(kubeconfig []string, namespacesFile string, factor int) (floodResult, error) {
	data, err := os.ReadFile(namespacesFile)
	if err != nil {
		return floodResult{}, err
	}
	namespaces := strings.Fields(string(data))
	if len(kubeconfig) != 1 || len(namespaces) < 2 {
		return floodResult{}, fmt.Errorf("the flood needs one kubeconfig and two namespaces or more")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig[0])
	if err != nil {
		return floodResult{}, err
	}
	return flood(cfg, namespaces, factor)
}

func run(kubeconfig []string, namespacesFile string) (result, error) {
	data, err := os.ReadFile(namespacesFile)
	if err != nil {
		return result{}, err
	}
	namespaces := strings.Fields(string(data))
	cfgs, err := configs(kubeconfig, namespaces)
	if err != nil {
		return result{}, err
	}
	cfg := cfgs[0] // the manager's own cluster
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, err := mcmanager.New(cfg, clusters.New(), mcmanager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return result{}, fmt.Errorf("make the manager: %w", err)
	}
	kinds := []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}, &corev1.ServiceAccount{}}
	for i, kind := range kinds {
		err := mcbuilder.ControllerManagedBy(mgr).Named(fmt.Sprintf("cost-%d", i)).For(kind).
			Complete(mcreconcile.Func(func(context.Context, mcreconcile.Request) (ctrl.Result, error) { return ctrl.Result{}, nil }))
		if err != nil {
			return result{}, fmt.Errorf("make controller %d: %w", i, err)
		}
	}
	errs := make(chan error, 1)
	go func() { errs <- mgr.Start(ctx) }()
	if !mgr.GetLocalManager().GetCache().WaitForCacheSync(ctx) {
		return result{}, fmt.Errorf("the manager's cache did not sync")
	}
	time.Sleep(time.Second) // the manager's runnables start after its cache syncs
	g0, h0 := settle()
	sync, stop := context.WithTimeout(ctx, 5*time.Minute)
	defer stop()
	var engaged []cluster.Cluster
	for i, ns := range namespaces {
		cl, err := cluster.New(cfgs[i], func(o *cluster.Options) {
			o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
		})
		if err != nil {
			return result{}, fmt.Errorf("make cluster %s: %w", ns, err)
		}
		// Started before it is engaged, as multicluster-runtime's
		// kubeconfig provider does: the sources an engagement starts wait
		// for the cluster's cache to start (clusters.Provider.Add would
		// start it after engaging it, and wait for ever).
		go func() { _ = cl.Start(ctx) }()
		if err := mgr.Engage(ctx, ns, cl); err != nil {
			return result{}, fmt.Errorf("engage cluster %s: %w", ns, err)
		}
		engaged = append(engaged, cl)
	}
	for i, cl := range engaged {
		ns := namespaces[i]
		for _, kind := range kinds {
			if _, err := cl.GetCache().GetInformer(sync, kind); err != nil {
				return result{}, fmt.Errorf("sync %T in cluster %s: %w", kind, ns, err)
			}
		}
	}
	g1, h1 := settle()
	select {
	case err := <-errs:
		return result{}, fmt.Errorf("the manager stopped: %v", err)
	default:
	}
	n := float64(len(namespaces))
	return result{Clusters: len(namespaces), GoroutinesPerCluster: float64(g1-g0) / n, HeapBytesPerCluster: float64(int64(h1)-int64(h0)) / n}, nil
}

// settle collects twice and returns the goroutines and the live heap.
func settle() (int, uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}
