package fleet_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/fleet"
)

// BenchmarkCostPerMember engages members confined to a namespace each,
// with three kinds registered and nothing in them, waits until every
// member has synced, and reports the goroutines and live heap each member
// adds (the figures issue 50 targets at 25 goroutines and 0.5 MiB).
func BenchmarkCostPerMember(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				goroutines, heap := costOf(b, n)
				b.ReportMetric(goroutines, "goroutines/member")
				b.ReportMetric(heap, "heap-bytes/member")
			}
		})
	}
}

func costOf(b *testing.B, n int) (goroutines, heap float64) {
	f := newFleet(b, fleet.Options{})
	for _, register := range []func() error{
		func() error { _, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{}); return err },
		func() error { _, err := fleet.Register[*corev1.Secret](f, cache.TypeOptions{}); return err },
		func() error { _, err := fleet.Register[*corev1.ServiceAccount](f, cache.TypeOptions{}); return err },
	} {
		if err := register(); err != nil {
			b.Fatal(err)
		}
	}
	namespaces := make([]string, n)
	for i := range namespaces {
		namespaces[i] = env.Namespace(b)
	}
	g0, h0 := settle()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	for _, ns := range namespaces {
		if err := f.Engage(ctx, fleet.Member{Name: ns, Config: env.Config(), Namespace: ns}); err != nil {
			b.Fatal(err)
		}
	}
	sync, stop := context.WithTimeout(ctx, 5*time.Minute)
	defer stop()
	for _, ns := range namespaces {
		c, err := f.Cluster(ns)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Cache().WaitForSync(sync); err != nil {
			b.Fatal(err)
		}
	}
	g1, h1 := settle()
	return float64(g1-g0) / float64(n), float64(h1-h0) / float64(n)
}

// settle collects twice and returns the goroutines and the live heap.
func settle() (int, uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}
