package cache_test

// Benchmarks of opkit's cache side by side with controller-runtime's, with
// default options, against the test control plane and the same objects.
// Run them with `make bench`, which prints the ratios (hack/benchtable).
//
// Rows are Benchmark<workload>/<impl>:
//   - HeapConfigMaps, HeapPods: the live heap a synced cache adds (heap-B),
//     for 10,000 objects created as users create them: half with kubectl's
//     client-side apply (last-applied annotation, managed fields), half with
//     server-side apply. Impls: opkit, opkitmeta (metadata only),
//     ctrlruntime. Each cache is measured before the next starts.
//   - Get: one cached ConfigMap by namespace and name. Impls: opkit (Lister),
//     ctrlruntime (the cache's client.Get, which deep-copies), map (a bare Go
//     map lookup of the same key).
//   - List200: a namespace of 200 ConfigMaps. Impls: opkit, ctrlruntime.
//   - SyncPods: start a cache of 10,000 Pods and wait for it to sync
//     (sync-s). Impls: opkit, ctrlruntime.
//   - BytesPerObject/<shape>: the live heap per cached object against the
//     floor, per cache kind (bytes_bench_test.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/pkg/cache"
)

const (
	benchObjects   = 10000
	benchCMNS      = "bench-configmaps"
	benchPodNS     = "bench-pods"
	benchListNS    = "bench-list"
	benchListItems = 200
)

// benchConfig is the control plane's config without client-side throttling,
// so that neither cache is held back by it.
func benchConfig() *rest.Config {
	cfg := rest.CopyConfig(env.Config())
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

func skipWithMutationDetector(b *testing.B) {
	if os.Getenv(cacheaccess.MutationDetectorEnv) != "false" {
		b.Skipf("the mutation detector doubles every cache: run with %s=false (make bench does)", cacheaccess.MutationDetectorEnv)
	}
}

// benchObjectsOnce creates the benchmark's objects once per process.
var benchObjectsOnce = sync.OnceValue(func() error {
	crlog.SetLogger(logr.Discard()) // controller-runtime's cache logs through it
	cl, err := client.New(benchConfig(), client.Options{})
	if err != nil {
		return err
	}
	ctx := context.Background()
	for _, ns := range []string{benchCMNS, benchPodNS, benchListNS} {
		if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	if err := parallel(benchObjects, func(i int) error { return createAsUsersDo(ctx, cl, benchConfigMap(benchCMNS, i), i) }); err != nil {
		return err
	}
	if err := parallel(benchObjects, func(i int) error { return createAsUsersDo(ctx, cl, benchPod(i), i) }); err != nil {
		return err
	}
	return parallel(benchListItems, func(i int) error { return cl.Create(ctx, benchConfigMap(benchListNS, i)) })
})

// createAsUsersDo creates obj with kubectl's client-side apply when i is
// even (the whole object in the last-applied annotation, managed fields of
// kubectl-client-side-apply) and with server-side apply when i is odd.
func createAsUsersDo(ctx context.Context, cl client.Client, obj client.Object, i int) error {
	gvk, err := cl.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if i%2 == 0 {
		applied, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		a := obj.GetAnnotations()
		a[corev1.LastAppliedConfigAnnotation] = string(applied)
		obj.SetAnnotations(a)
		return cl.Create(ctx, obj, client.FieldOwner("kubectl-client-side-apply"))
	}
	//lint:ignore SA1019 a patch of type apply is what kubectl's server-side apply sends
	return cl.Patch(ctx, obj, client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership)
}

func parallel(n int, f func(i int) error) error {
	const workers = 32
	errs := make(chan error, workers)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	go func() {
		defer close(next)
		for i := range n {
			select {
			case next <- i:
			case err := <-errs:
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func benchConfigMap(ns string, i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("settings-%05d", i), Namespace: ns,
			Labels:      map[string]string{"app.kubernetes.io/name": "shop", "app.kubernetes.io/component": "api"},
			Annotations: map[string]string{"owner": "team-payments"},
		},
		Data: map[string]string{
			"INSTANCE":     fmt.Sprintf("settings-%05d", i), // no two alike
			"LOG_LEVEL":    "info",
			"DATABASE_URL": fmt.Sprintf("postgres://shop-%d.db.svc:5432/shop?sslmode=require", i%7),
			"FEATURES":     "checkout-v2,inventory-sync,price-alerts",
			"TIMEOUT":      "30s",
			"config.yaml":  fmt.Sprintf("server:\n  port: 8080\n  workers: %d\ncache:\n  ttl: 5m\n  size: 1024\n", 4+i%4),
		},
	}
}

// benchPod is a Pod as a Deployment makes them: two containers with probes,
// environment and resources.
func benchPod(i int) *corev1.Pod {
	probe := func(path string, port int) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(int32(port))}},
			PeriodSeconds:    10,
			TimeoutSeconds:   1,
			FailureThreshold: 3,
		}
	}
	res := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
		}
	}
	noToken := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("shop-api-7d9c8b6f5d-%05d", i),
			Namespace: benchPodNS,
			Labels: map[string]string{
				"app.kubernetes.io/name": "shop", "app.kubernetes.io/component": "api",
				"pod-template-hash": "7d9c8b6f5d",
			},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
		},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: &noToken,
			Containers: []corev1.Container{
				{
					Name:  "api",
					Image: "registry.example.com/shop/api:1.42.0",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
					Env: []corev1.EnvVar{
						{Name: "LOG_LEVEL", Value: "info"},
						{Name: "DATABASE_URL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: "shop-db"}, Key: "url"}}},
						{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					},
					Resources:      res("250m", "256Mi"),
					LivenessProbe:  probe("/healthz", 8080),
					ReadinessProbe: probe("/readyz", 8080),
				},
				{
					Name:           "proxy",
					Image:          "registry.example.com/envoy:1.30.1",
					Args:           []string{"--config-path", "/etc/envoy/envoy.yaml", "--log-level", "warn"},
					Ports:          []corev1.ContainerPort{{Name: "https", ContainerPort: 8443}},
					Resources:      res("100m", "128Mi"),
					ReadinessProbe: probe("/ready", 9901),
				},
			},
		},
	}
}

// liveHeap returns the live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// cacheUnderTest starts a cache of one type and namespace, waits for it to
// sync, and returns a function that stops it.
type cacheUnderTest func(b *testing.B, ctx context.Context, ns string, obj client.Object) (keep any)

func opkitCache(metadataOnly bool) cacheUnderTest {
	return func(b *testing.B, ctx context.Context, ns string, obj client.Object) any {
		c, err := cache.New(benchConfig(), cache.Options{Namespaces: []string{ns}})
		if err != nil {
			b.Fatal(err)
		}
		gvk, err := gvkOf(obj)
		if err != nil {
			b.Fatal(err)
		}
		if metadataOnly {
			_, err = cache.Metadata(c, gvk, cache.TypeOptions{})
		} else if _, ok := obj.(*corev1.Pod); ok {
			_, err = cache.Register[*corev1.Pod](c, cache.TypeOptions{})
		} else {
			_, err = cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		if err := c.WaitForSync(ctx); err != nil {
			b.Fatal(err)
		}
		return c
	}
}

// opkitLazyCache caches obj's kind with cache.Lazy: metadata after sync,
// no object read in full.
func opkitLazyCache(b *testing.B, ctx context.Context, ns string, obj client.Object) any {
	c, err := cache.New(benchConfig(), cache.Options{Namespaces: []string{ns}})
	if err != nil {
		b.Fatal(err)
	}
	if _, ok := obj.(*corev1.Pod); ok {
		_, err = cache.Lazy[*corev1.Pod](c, cache.TypeOptions{})
	} else {
		_, err = cache.Lazy[*corev1.ConfigMap](c, cache.TypeOptions{})
	}
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if err := c.WaitForSync(ctx); err != nil {
		b.Fatal(err)
	}
	return c
}

func ctrlRuntimeCache(b *testing.B, ctx context.Context, ns string, obj client.Object) any {
	c, err := crcache.New(benchConfig(), crcache.Options{
		Scheme:            scheme.Scheme,
		DefaultNamespaces: map[string]crcache.Config{ns: {}},
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.GetInformer(ctx, obj); err != nil {
		b.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("controller-runtime's cache did not sync")
	}
	return c
}

func gvkOf(obj client.Object) (schema.GroupVersionKind, error) {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return gvks[0], nil
}

var heapImpls = []struct {
	name  string
	start cacheUnderTest
}{
	{"opkit", opkitCache(false)},
	{"opkitmeta", opkitCache(true)},
	{"opkitlazy", opkitLazyCache},
	{"ctrlruntime", ctrlRuntimeCache},
}

func benchHeap(b *testing.B, ns string, obj client.Object) {
	skipWithMutationDetector(b)
	if err := benchObjectsOnce(); err != nil {
		b.Fatal(err)
	}
	for _, im := range heapImpls {
		b.Run(im.name, func(b *testing.B) {
			for b.Loop() {
				ctx, cancel := context.WithCancel(context.Background())
				before := liveHeap()
				keep := im.start(b, ctx, ns, obj)
				after := liveHeap()
				runtime.KeepAlive(keep)
				cancel()
				b.ReportMetric(float64(after)-float64(before), "heap-B")
				time.Sleep(100 * time.Millisecond) // let the informers end
			}
		})
	}
}

func BenchmarkHeapConfigMaps(b *testing.B) { benchHeap(b, benchCMNS, &corev1.ConfigMap{}) }
func BenchmarkHeapPods(b *testing.B)       { benchHeap(b, benchPodNS, &corev1.Pod{}) }

func BenchmarkSyncPods(b *testing.B) {
	skipWithMutationDetector(b)
	if err := benchObjectsOnce(); err != nil {
		b.Fatal(err)
	}
	impls := []struct {
		name  string
		start cacheUnderTest
	}{{"opkit", opkitCache(false)}, {"ctrlruntime", ctrlRuntimeCache}}
	// go test runs each sub-benchmark -count times in a row, so on a shared
	// machine one impl's syncs and the other's run minutes apart, under
	// different loads. Running them in the order A, B, B, A puts a drift in
	// load on both; the second runs are named <impl>#01, which benchtable
	// counts as <impl>.
	for _, i := range []int{0, 1, 1, 0} {
		im := impls[i]
		b.Run(im.name, func(b *testing.B) {
			var total time.Duration
			n := 0
			for b.Loop() {
				ctx, cancel := context.WithCancel(context.Background())
				t0 := time.Now()
				im.start(b, ctx, benchPodNS, &corev1.Pod{})
				total += time.Since(t0)
				n++
				cancel()
				time.Sleep(100 * time.Millisecond)
			}
			b.ReportMetric(total.Seconds()/float64(n), "sync-s")
		})
	}
}

func BenchmarkGet(b *testing.B) {
	skipWithMutationDetector(b)
	if err := benchObjectsOnce(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := types.NamespacedName{Namespace: benchCMNS, Name: "settings-04242"}

	b.Run("opkit", func(b *testing.B) {
		c := opkitCache(false)(b, ctx, benchCMNS, &corev1.ConfigMap{}).(*cache.Cache)
		cms, err := cache.Lookup[*corev1.ConfigMap](c)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cms.Get(key.Namespace, key.Name); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ctrlruntime", func(b *testing.B) {
		c := ctrlRuntimeCache(b, ctx, benchCMNS, &corev1.ConfigMap{}).(crcache.Cache)
		b.ReportAllocs()
		for b.Loop() {
			var cm corev1.ConfigMap
			if err := c.Get(ctx, key, &cm); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		m := make(map[types.NamespacedName]*corev1.ConfigMap, benchObjects)
		for i := range benchObjects {
			cm := benchConfigMap(benchCMNS, i)
			m[types.NamespacedName{Namespace: cm.Namespace, Name: cm.Name}] = cm
		}
		b.ReportAllocs()
		for b.Loop() {
			if m[key] == nil {
				b.Fatal("missing")
			}
		}
	})
}

func BenchmarkList200(b *testing.B) {
	skipWithMutationDetector(b)
	if err := benchObjectsOnce(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("opkit", func(b *testing.B) {
		c := opkitCache(false)(b, ctx, benchListNS, &corev1.ConfigMap{}).(*cache.Cache)
		cms, err := cache.Lookup[*corev1.ConfigMap](c)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if got, _ := cms.List(benchListNS, nil); len(got) != benchListItems {
				b.Fatalf("listed %d", len(got))
			}
		}
	})
	b.Run("ctrlruntime", func(b *testing.B) {
		c := ctrlRuntimeCache(b, ctx, benchListNS, &corev1.ConfigMap{}).(crcache.Cache)
		b.ReportAllocs()
		for b.Loop() {
			var list corev1.ConfigMapList
			if err := c.List(ctx, &list, client.InNamespace(benchListNS)); err != nil || len(list.Items) != benchListItems {
				b.Fatalf("listed %d: %v", len(list.Items), err)
			}
		}
	})
}
