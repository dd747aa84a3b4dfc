package cache_test

// BenchmarkBytesPerObject measures the live heap a synced cache takes per
// cached object, per cache kind, against controller-runtime's cache of the
// same kind and against the floor: the bytes of what a controller can read
// of each object (floorBytes). Rows are
// BytesPerObject/<shape>/<impl>, reporting:
//   - B/obj: the live heap the synced cache added, divided by the objects
//     it holds (the informers' fixed cost included);
//   - floor-B/obj: the floor of the impl's kind, the mean over the objects;
//   - xfloor: B/obj ÷ floor-B/obj;
//   - json-B/obj: the mean size of the shape's objects as JSON, as the API
//     server lists them (managed fields and annotations included).
//
// hack/benchtable divides opkit's rows by controller-runtime's of the same
// kind. Impls: opkit (Register of *corev1.ConfigMap), opkitmeta (Metadata),
// opkitlazy (Lazy, no object read in full), ctrlruntime (its cache of
// *corev1.ConfigMap), ctrlruntimemeta (its cache of
// metav1.PartialObjectMetadata). Every cache watches every namespace, as
// operators' caches do, limited by a label selector to the shape's objects.
//
// Shapes, bytesObjects ConfigMaps each, over bytesNamespaces namespaces:
//   - realistic: about 1.2 KiB of data, four labels, an owner reference
//     (four ConfigMaps per owner) and an annotation; every other one
//     created with kubectl's client-side apply (the whole object again in
//     the last-applied annotation), the others with server-side apply;
//   - small: one short data entry and two labels, nothing else.
//
// json-B/obj says what the shapes weigh as JSON: about 3.5 KiB and 0.5.
//
// With OPKIT_BENCH_HEAP_PROFILE=dir, each row also writes the heap profile
// of its synced cache to dir/<shape>-<impl>.pprof, sampled finely: read it
// with go tool pprof -sample_index=inuse_space.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/opkit-dev/opkit/pkg/cache"
)

const (
	bytesObjects    = 10000
	bytesNamespaces = 20
	bytesShapeLabel = "bench.opkit.dev/shape"
)

// bytesShape is one shape of ConfigMap the benchmark caches.
type bytesShape struct {
	name   string
	object func(i int) *corev1.ConfigMap
	// create writes object i as users would.
	create func(ctx context.Context, cl client.Client, cm *corev1.ConfigMap, i int) error
}

var bytesShapes = []bytesShape{
	{name: "realistic", object: realisticConfigMap, create: func(ctx context.Context, cl client.Client, cm *corev1.ConfigMap, i int) error {
		return createAsUsersDo(ctx, cl, cm, i)
	}},
	{name: "small", object: smallConfigMap, create: func(ctx context.Context, cl client.Client, cm *corev1.ConfigMap, _ int) error {
		return cl.Create(ctx, cm)
	}},
}

func bytesNamespace(shape string, i int) string {
	return fmt.Sprintf("bytes-%s-%02d", shape, i%bytesNamespaces)
}

// realisticConfigMap is a ConfigMap an operator makes for each of its
// custom resources' components: four per owner.
func realisticConfigMap(i int) *corev1.ConfigMap {
	owner := i / 4
	yes := true
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  port: 8080\n  workers: %d\n  readTimeout: 30s\n  writeTimeout: 30s\n", 4+i%4)
	fmt.Fprintf(&b, "database:\n  host: shop-%d.db.svc.cluster.local\n  port: 5432\n  pool:\n    min: 2\n    max: %d\n", i%7, 16+i%8)
	b.WriteString("cache:\n  ttl: 5m\n  size: 1024\n  evictionPolicy: lru\n")
	b.WriteString("features:\n")
	for _, f := range []string{"checkout-v2", "inventory-sync", "price-alerts", "recommendations", "gift-cards", "loyalty-points"} {
		fmt.Fprintf(&b, "  %s:\n    enabled: %t\n    rollout: %d\n", f, (i+len(f))%3 != 0, (i*len(f))%100)
	}
	b.WriteString("logging:\n  level: info\n  format: json\n  sampling:\n    initial: 100\n    thereafter: 100\n")
	b.WriteString("tracing:\n  endpoint: otel-collector.observability.svc:4317\n  sampleRatio: 0.05\n")
	b.WriteString("routes:\n")
	for _, r := range []string{"cart", "checkout", "catalog", "search"} {
		fmt.Fprintf(&b, "  - path: /api/v1/%s\n    upstream: http://%s.shop-%04d.svc:8080\n    timeout: %ds\n", r, r, owner, 5+i%5)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("shop-%04d-%s", owner, []string{"api", "worker", "cron", "web"}[i%4]),
			Namespace: bytesNamespace("realistic", owner),
			Labels: map[string]string{
				bytesShapeLabel:                "realistic",
				"app.kubernetes.io/name":       "shop",
				"app.kubernetes.io/instance":   fmt.Sprintf("shop-%04d", owner),
				"app.kubernetes.io/managed-by": "shop-operator",
			},
			Annotations: map[string]string{"shop.example.com/team": "payments"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "shop.example.com/v1", Kind: "Shop", Name: fmt.Sprintf("shop-%04d", owner),
				UID:        types.UID(fmt.Sprintf("6f1c2a3e-0b4d-4c5e-9f60-%012d", owner)),
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Data: map[string]string{
			"config.yaml":  b.String(),
			"INSTANCE":     fmt.Sprintf("shop-%04d", owner),
			"LOG_LEVEL":    "info",
			"DATABASE_URL": fmt.Sprintf("postgres://shop-%d.db.svc:5432/shop?sslmode=require", i%7),
			"FEATURES":     "checkout-v2,inventory-sync,price-alerts",
			"TIMEOUT":      "30s",
		},
	}
}

func smallConfigMap(i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("cm-%05d", i),
			Namespace: bytesNamespace("small", i),
			Labels:    map[string]string{bytesShapeLabel: "small", "app": "small"},
		},
		Data: map[string]string{"value": fmt.Sprint(i)},
	}
}

// floors are a shape's mean floors, metadata-only and typed, and the mean
// size of its objects as JSON, as the API server lists them.
type floors struct{ meta, typed, json float64 }

// bytesObjectsOnce creates each shape's objects once per process, and
// returns their floors, read back from the API server.
var bytesObjectsOnce = sync.OnceValues(func() (map[string]floors, error) {
	crlog.SetLogger(logr.Discard()) // controller-runtime's cache logs through it
	cl, err := client.New(benchConfig(), client.Options{})
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	out := map[string]floors{}
	for _, s := range bytesShapes {
		for i := range bytesNamespaces {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bytesNamespace(s.name, i)}}
			if err := cl.Create(ctx, ns); err != nil {
				return nil, fmt.Errorf("create namespace %s: %w", ns.Name, err)
			}
		}
		if err := parallel(bytesObjects, func(i int) error { return s.create(ctx, cl, s.object(i), i) }); err != nil {
			return nil, fmt.Errorf("create %s ConfigMaps: %w", s.name, err)
		}
		var list corev1.ConfigMapList
		if err := cl.List(ctx, &list, client.MatchingLabels{bytesShapeLabel: s.name}); err != nil {
			return nil, err
		}
		var f floors
		for i := range list.Items {
			b, err := json.Marshal(&list.Items[i])
			if err != nil {
				return nil, err
			}
			f.json += float64(len(b))
			m, t := floorBytes(&list.Items[i])
			f.meta += float64(m)
			f.typed += float64(t)
		}
		n := float64(len(list.Items))
		out[s.name] = floors{f.meta / n, f.typed / n, f.json / n}
	}
	return out, nil
})

// floorBytes returns the floor of cm, metadata-only and typed: the bytes
// of the fields a controller can read of it through opkit's cache by
// default (managed fields and the last-applied annotation stripped), as
// the sum of their strings' lengths (each key and value of a map) plus 8
// bytes for each number, bool and time set. Metadata: name, generateName,
// namespace, uid, resourceVersion, generation, creationTimestamp,
// deletionTimestamp and deletionGracePeriodSeconds if set, labels,
// annotations, owner references (apiVersion, kind, name, uid, controller,
// blockOwnerDeletion) and finalizers. Typed adds data, binaryData and
// immutable. The type's apiVersion and kind, the same for every object,
// are not counted.
func floorBytes(cm *corev1.ConfigMap) (meta, typed int) {
	m := &cm.ObjectMeta
	n := len(m.Name) + len(m.GenerateName) + len(m.Namespace) + len(m.UID) + len(m.ResourceVersion)
	n += 8 + 8 // generation, creationTimestamp
	if m.DeletionTimestamp != nil {
		n += 8
	}
	if m.DeletionGracePeriodSeconds != nil {
		n += 8
	}
	n += mapBytes(m.Labels)
	annotations := m.Annotations
	delete(annotations, corev1.LastAppliedConfigAnnotation)
	n += mapBytes(annotations)
	for _, r := range m.OwnerReferences {
		n += len(r.APIVersion) + len(r.Kind) + len(r.Name) + len(r.UID)
		if r.Controller != nil {
			n += 8
		}
		if r.BlockOwnerDeletion != nil {
			n += 8
		}
	}
	for _, f := range m.Finalizers {
		n += len(f)
	}
	typed = n + mapBytes(cm.Data)
	for k, v := range cm.BinaryData {
		typed += len(k) + len(v)
	}
	if cm.Immutable != nil {
		typed += 8
	}
	return n, typed
}

func mapBytes(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// bytesImpl starts a cache of the shape's ConfigMaps, of one kind, and
// waits for it to sync.
type bytesImpl struct {
	name     string
	metadata bool // whether the metadata-only floor applies
	start    func(b *testing.B, ctx context.Context, sel labels.Selector) (keep any)
}

var bytesImpls = []bytesImpl{
	{"opkit", false, func(b *testing.B, ctx context.Context, sel labels.Selector) any {
		return startOpkit(b, ctx, func(c *cache.Cache) error {
			_, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{LabelSelector: sel})
			return err
		})
	}},
	{"opkitmeta", true, func(b *testing.B, ctx context.Context, sel labels.Selector) any {
		return startOpkit(b, ctx, func(c *cache.Cache) error {
			_, err := cache.Metadata(c, configMapGVK, cache.TypeOptions{LabelSelector: sel})
			return err
		})
	}},
	{"opkitlazy", true, func(b *testing.B, ctx context.Context, sel labels.Selector) any {
		return startOpkit(b, ctx, func(c *cache.Cache) error {
			_, err := cache.Lazy[*corev1.ConfigMap](c, cache.TypeOptions{LabelSelector: sel})
			return err
		})
	}},
	{"ctrlruntime", false, func(b *testing.B, ctx context.Context, sel labels.Selector) any {
		return startCtrlRuntime(b, ctx, sel, &corev1.ConfigMap{})
	}},
	{"ctrlruntimemeta", true, func(b *testing.B, ctx context.Context, sel labels.Selector) any {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(configMapGVK)
		return startCtrlRuntime(b, ctx, sel, m)
	}},
}

func startOpkit(b *testing.B, ctx context.Context, register func(*cache.Cache) error) *cache.Cache {
	c, err := cache.New(benchConfig(), cache.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := register(c); err != nil {
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

func startCtrlRuntime(b *testing.B, ctx context.Context, sel labels.Selector, obj client.Object) crcache.Cache {
	c, err := crcache.New(benchConfig(), crcache.Options{Scheme: scheme.Scheme, DefaultLabelSelector: sel})
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

func BenchmarkBytesPerObject(b *testing.B) {
	skipWithMutationDetector(b)
	if os.Getenv(heapProfileEnv) != "" {
		runtime.MemProfileRate = 64
	}
	fl, err := bytesObjectsOnce()
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range bytesShapes {
		sel := labels.SelectorFromSet(labels.Set{bytesShapeLabel: s.name})
		b.Run(s.name, func(b *testing.B) {
			for _, im := range bytesImpls {
				floor := fl[s.name].typed
				if im.metadata {
					floor = fl[s.name].meta
				}
				b.Run(im.name, func(b *testing.B) {
					for b.Loop() {
						ctx, cancel := context.WithCancel(context.Background())
						before := liveHeap()
						keep := im.start(b, ctx, sel)
						after := liveHeap()
						if err := writeHeapProfile(s.name + "-" + im.name); err != nil {
							b.Fatal(err)
						}
						runtime.KeepAlive(keep)
						cancel()
						perObject := (float64(after) - float64(before)) / bytesObjects
						b.ReportMetric(perObject, "B/obj")
						b.ReportMetric(floor, "floor-B/obj")
						b.ReportMetric(perObject/floor, "xfloor")
						b.ReportMetric(fl[s.name].json, "json-B/obj")
						time.Sleep(100 * time.Millisecond) // let the informers end
					}
				})
			}
		})
	}
}

const heapProfileEnv = "OPKIT_BENCH_HEAP_PROFILE"

// writeHeapProfile writes the heap profile to the directory heapProfileEnv
// names, if it names one.
func writeHeapProfile(name string) error {
	dir := os.Getenv(heapProfileEnv)
	if dir == "" {
		return nil
	}
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err != nil {
		return fmt.Errorf("write heap profile: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("write heap profile: %w", err)
	}
	return f.Close()
}
