package cache_test

// BenchmarkColdStart times a cache from Start to synced among many
// ConfigMaps and Secrets, side by side with controller-runtime's, rows
// BenchmarkColdStart/<impl>:
//   - opkit: the caches cmd/sample-operator's Mirror registers for its
//     sources and copies (each kind as metadata twice, the copies and the
//     rest apart by label selector, the copies indexed by Mirror) and
//     Namespaces, with metrics on, as the manager starts them;
//   - ctrlruntime: controller-runtime's cache as hack/bench/crmirror
//     configures it: ConfigMaps, Secrets and Namespaces in full, managed
//     fields stripped, ConfigMaps and Secrets indexed by Mirror.
//
// Metrics: ready-s (Start to synced), cpu-s (CPU seconds of the test
// process meanwhile: the cache's decoding, transforms and stores) and
// apiserver-cpu-s (the kube-apiserver's, serving the lists).
// OPKIT_BENCH_COLD_OBJECTS sets how many ConfigMaps and Secrets to create
// (default 20,000; two ConfigMaps for each Secret, in namespaces of 300,
// half by client-side and half by server-side apply, shaped as
// hack/bench/e2e's fill), once per process. OPKIT_BENCH_COLD_PROFILE=DIR
// writes a CPU profile of each row's starts, DIR/coldstart-<row>.pprof.

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes/scheme"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/opkit-dev/opkit/pkg/cache"
)

const (
	coldObjectsEnv     = "OPKIT_BENCH_COLD_OBJECTS"
	coldProfileEnv     = "OPKIT_BENCH_COLD_PROFILE"
	coldObjectsDefault = 20000
	coldPerNamespace   = 300
	// coldCopyLabel stands for the Mirror's copy label: no fill object
	// has it, as none is a copy.
	coldCopyLabel = "samples.opkit.dev/mirror-name"
	coldIndex     = "mirror.copyOf"
)

func coldObjects() (int, error) {
	s := os.Getenv(coldObjectsEnv)
	if s == "" {
		return coldObjectsDefault, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 3 {
		return 0, fmt.Errorf("%s=%q: want a number of objects, at least 3", coldObjectsEnv, s)
	}
	return n, nil
}

// coldObjectsOnce creates the cold start's objects once per process.
var coldObjectsOnce = sync.OnceValue(func() error {
	n, err := coldObjects()
	if err != nil {
		return err
	}
	crlog.SetLogger(logr.Discard()) // controller-runtime's cache logs through it
	cl, err := client.New(benchConfig(), client.Options{})
	if err != nil {
		return err
	}
	ctx := context.Background()
	namespaces := (n + coldPerNamespace - 1) / coldPerNamespace
	for i := range namespaces {
		if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: coldNamespace(i)}}); err != nil {
			return fmt.Errorf("create namespace %s: %w", coldNamespace(i), err)
		}
	}
	return parallel(n, func(i int) error { return createAsUsersDo(ctx, cl, coldObject(i, namespaces), i) })
})

func coldNamespace(i int) string { return fmt.Sprintf("cold-%03d", i) }

var coldApps = []string{"checkout", "payments", "catalog", "search", "auth", "gateway", "billing", "inventory"}

// coldObject returns object i: a Secret if i%3 == 2, else a ConfigMap,
// with the fill's labels and 3 to 6 keys of 150 B to 3 KiB (log-uniform).
func coldObject(i, namespaces int) client.Object {
	rng := rand.New(rand.NewPCG(uint64(i), 49))
	app := coldApps[i%len(coldApps)]
	m := metav1.ObjectMeta{
		Namespace: coldNamespace(i % namespaces),
		Labels: map[string]string{
			"app.kubernetes.io/name":      app,
			"app.kubernetes.io/instance":  fmt.Sprintf("%s-%d", app, i%7),
			"app.kubernetes.io/version":   fmt.Sprintf("1.%d.%d", i%13, i%5),
			"app.kubernetes.io/component": []string{"api", "worker", "frontend", "db"}[i%4],
			"app.kubernetes.io/part-of":   "shop",
		},
		Annotations: map[string]string{},
	}
	keys := 3 + rng.IntN(4)
	value := func() string {
		size := int(150 * math.Pow(3072.0/150, rng.Float64()))
		b := make([]byte, size*3/4)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	if i%3 == 2 {
		m.Name = fmt.Sprintf("%s-secret-%06d", app, i)
		s := &corev1.Secret{ObjectMeta: m, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
		for k := range keys {
			s.Data[fmt.Sprintf("key-%d", k)] = []byte(value())
		}
		return s
	}
	m.Name = fmt.Sprintf("%s-config-%06d", app, i)
	cm := &corev1.ConfigMap{ObjectMeta: m, Data: map[string]string{}}
	for k := range keys {
		cm.Data[fmt.Sprintf("setting-%d.yaml", k)] = value()
	}
	return cm
}

// coldCopyIndex is the Mirror's index of copies.
func coldCopyIndex(obj client.Object) []string {
	if v := obj.GetLabels()[coldCopyLabel]; v != "" {
		return []string{obj.GetNamespace() + "/" + v}
	}
	return nil
}

// opkitColdStart registers what the sample operator's Mirror caches, and
// starts the cache.
func opkitColdStart(b *testing.B, ctx context.Context) {
	c, err := cache.New(benchConfig(), cache.Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	isCopy, err := labels.NewRequirement(coldCopyLabel, selection.Exists, nil)
	if err != nil {
		b.Fatal(err)
	}
	notCopy, err := labels.NewRequirement(coldCopyLabel, selection.DoesNotExist, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, kind := range []string{"ConfigMap", "Secret"} {
		gvk := corev1.SchemeGroupVersion.WithKind(kind)
		copies, err := cache.Metadata(c, gvk, cache.TypeOptions{LabelSelector: labels.NewSelector().Add(*isCopy)})
		if err != nil {
			b.Fatal(err)
		}
		if err := copies.AddIndex(coldIndex, func(obj *metav1.PartialObjectMetadata) []string { return coldCopyIndex(obj) }); err != nil {
			b.Fatal(err)
		}
		if _, err := cache.Metadata(c, gvk, cache.TypeOptions{LabelSelector: labels.NewSelector().Add(*notCopy)}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := cache.Register[*corev1.Namespace](c, cache.TypeOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if err := c.WaitForSync(ctx); err != nil {
		b.Fatal(err)
	}
}

// ctrlRuntimeColdStart configures controller-runtime's cache as
// hack/bench/crmirror does, and starts it.
func ctrlRuntimeColdStart(b *testing.B, ctx context.Context) {
	c, err := crcache.New(benchConfig(), crcache.Options{Scheme: scheme.Scheme, DefaultTransform: crcache.TransformStripManagedFields()})
	if err != nil {
		b.Fatal(err)
	}
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}} {
		if err := c.IndexField(ctx, obj, coldIndex, coldCopyIndex); err != nil {
			b.Fatal(err)
		}
	}
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}, &corev1.Namespace{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("controller-runtime's cache did not sync")
	}
}

func BenchmarkColdStart(b *testing.B) {
	skipWithMutationDetector(b)
	if err := coldObjectsOnce(); err != nil {
		b.Fatal(err)
	}
	impls := []struct {
		name  string
		start func(*testing.B, context.Context)
	}{{"opkit", opkitColdStart}, {"ctrlruntime", ctrlRuntimeColdStart}}
	apiserver := apiServerPID()
	// A, B, B, A, as in BenchmarkSyncPods, so that a drift in the
	// machine's load falls on both.
	for _, i := range []int{0, 1, 1, 0} {
		im := impls[i]
		b.Run(im.name, func(b *testing.B) {
			stop := coldProfile(b)
			defer stop()
			var wall, cpu, server time.Duration
			n := 0
			for b.Loop() {
				ctx, cancel := context.WithCancel(context.Background())
				runtime.GC()
				t0, cpu0, server0 := time.Now(), processCPU(), procCPU(apiserver)
				im.start(b, ctx)
				wall += time.Since(t0)
				cpu += processCPU() - cpu0
				server += procCPU(apiserver) - server0
				n++
				cancel()
				time.Sleep(200 * time.Millisecond) // let the informers end
			}
			b.ReportMetric(wall.Seconds()/float64(n), "ready-s")
			b.ReportMetric(cpu.Seconds()/float64(n), "cpu-s")
			if apiserver > 0 {
				b.ReportMetric(server.Seconds()/float64(n), "apiserver-cpu-s")
			}
		})
	}
}

// coldProfile starts a CPU profile of b's starts if coldProfileEnv names
// a directory, and returns what stops it.
func coldProfile(b *testing.B) (stop func()) {
	dir := os.Getenv(coldProfileEnv)
	if dir == "" {
		return func() {}
	}
	name := strings.NewReplacer("/", "-", "#", "-").Replace(b.Name())
	f, err := os.Create(filepath.Join(dir, strings.ToLower(name)+".pprof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}

// processCPU returns the CPU time, user and system, of this process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// apiServerPID returns the pid of the kube-apiserver this process
// started, or 0 where /proc does not say.
func apiServerPID() int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		f, err := statFields(d)
		if err == nil && f.comm == "kube-apiserver" && f.ppid == os.Getpid() {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
			return pid
		}
	}
	return 0
}

// procCPU returns the CPU time, user and system, of process pid; 0 for
// pid 0 or where /proc does not say.
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	f, err := statFields(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// /proc counts in clock ticks, 100 a second on Linux.
	return time.Duration(f.ticks) * 10 * time.Millisecond
}

type procStat struct {
	comm  string
	ppid  int
	ticks int64 // utime + stime
}

func statFields(path string) (procStat, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, err
	}
	s := string(data)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return procStat{}, fmt.Errorf("parse %s", path)
	}
	// After the command: state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime.
	rest := strings.Fields(s[closing+1:])
	if len(rest) < 13 {
		return procStat{}, fmt.Errorf("parse %s", path)
	}
	ppid, _ := strconv.Atoi(rest[1])
	utime, _ := strconv.ParseInt(rest[11], 10, 64)
	stime, _ := strconv.ParseInt(rest[12], 10, 64)
	return procStat{comm: s[open+1 : closing], ppid: ppid, ticks: utime + stime}, nil
}
