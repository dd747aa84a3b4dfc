package fleet_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// BenchmarkCostPerMember engages members confined to a namespace each,
// with three kinds registered and nothing in them, waits until every
// member has synced, and reports the goroutines and live heap each member
// adds (the figures issue 50 targets at 25 goroutines and 0.5 MiB).
//
// Beside each, it runs hack/bench/mcrcost, which engages as many
// namespaces as multicluster-runtime clusters the same way (a cache per
// cluster holding its namespace, the three kinds watched) and reports the
// same two figures, and prints opkit's over multicluster-runtime's. Set
// OPKIT_BENCH_NO_MCR to skip it (it builds a module of its own, pinned to
// the controller-runtime multicluster-runtime needs).
//
// "10-apiservers" engages ten members on ten control planes of their own,
// started at once for it, each member confined to a new namespace of its
// control plane, so that each has its own connections, as members in
// clusters of their own have; hack/bench/mcrcost is handed the ten
// kubeconfigs.
func BenchmarkCostPerMember(b *testing.B) {
	mcr := ""
	if os.Getenv("OPKIT_BENCH_NO_MCR") == "" {
		mcr = buildMCRCost(b)
	}
	for _, n := range []int{10, 100, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				reportCost(b, mcr, n, func() []*testenv.Environment { return []*testenv.Environment{env} })
			}
		})
	}
	b.Run("10-apiservers", func(b *testing.B) {
		for range b.N {
			envs := startEnvs(b, 10)
			reportCost(b, mcr, len(envs), func() []*testenv.Environment { return envs })
		}
	})
}

// reportCost reports opkit's cost per member, and multicluster-runtime's
// beside it unless mcr is "", for n members on the control planes envs
// returns, round-robin, each member confined to a namespace of its own.
func reportCost(b *testing.B, mcr string, n int, envs func() []*testenv.Environment) {
	goroutines, heap := costOf(b, onEnvs(b, envs(), n))
	b.ReportMetric(goroutines, "goroutines/member")
	b.ReportMetric(heap, "heap-bytes/member")
	if mcr == "" {
		return
	}
	m := mcrCostOf(b, mcr, onEnvs(b, envs(), n))
	b.ReportMetric(m.GoroutinesPerCluster, "mcr-goroutines/member")
	b.ReportMetric(m.HeapBytesPerCluster, "mcr-heap-bytes/member")
	b.ReportMetric(goroutines/m.GoroutinesPerCluster, "goroutines/mcr")
	b.ReportMetric(heap/m.HeapBytesPerCluster, "heap/mcr")
}

// costMember is a member of a cost run: a new namespace of a control
// plane.
type costMember struct {
	env       *testenv.Environment
	namespace string
}

// onEnvs makes n new namespaces on envs, round-robin.
func onEnvs(b *testing.B, envs []*testenv.Environment, n int) []costMember {
	members := make([]costMember, n)
	for i := range members {
		e := envs[i%len(envs)]
		members[i] = costMember{env: e, namespace: e.Namespace(b)}
	}
	return members
}

// buildMCRCost builds hack/bench/mcrcost and returns the binary's path.
func buildMCRCost(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "mcrcost")
	out, err := exec.Command("go", "build", "-C", "../../hack/bench/mcrcost", "-o", bin, ".").CombinedOutput()
	if err != nil {
		b.Fatalf("build hack/bench/mcrcost: %v\n%s", err, out)
	}
	return bin
}

// mcrCost is what hack/bench/mcrcost prints.
type mcrCost struct {
	Clusters             int
	GoroutinesPerCluster float64
	HeapBytesPerCluster  float64
}

// mcrCostOf runs bin over members: one kubeconfig per member when they
// are on several control planes, else one for all.
func mcrCostOf(b *testing.B, bin string, members []costMember) mcrCost {
	n := len(members)
	dir := b.TempDir()
	var args []string
	namespaces := make([]string, n)
	for i, m := range members {
		namespaces[i] = m.namespace
		if i > 0 && m.env == members[0].env {
			continue
		}
		kubeconfig := filepath.Join(dir, "kubeconfig-"+strconv.Itoa(i))
		if err := m.env.WriteKubeconfig(kubeconfig); err != nil {
			b.Fatal(err)
		}
		args = append(args, "-api-kubeconfig", kubeconfig)
	}
	if len(args) != 2 && len(args) != 2*n {
		b.Fatalf("members on %d control planes: want one, or one each", len(args)/2)
	}
	list := filepath.Join(dir, "namespaces")
	if err := os.WriteFile(list, []byte(strings.Join(namespaces, "\n")), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.CommandContext(b.Context(), bin, append(args, "-namespaces", list)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("hack/bench/mcrcost: %v\n%s", err, stderr.String())
	}
	var m mcrCost
	if err := json.Unmarshal(out, &m); err != nil || m.Clusters != n {
		b.Fatalf("hack/bench/mcrcost printed %q (%v), want %d clusters", out, err, n)
	}
	return m
}

func costOf(b *testing.B, members []costMember) (goroutines, heap float64) {
	n := len(members)
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
	g0, h0 := settle()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	for _, m := range members {
		if err := f.Engage(ctx, fleet.Member{Name: m.namespace, Config: m.env.Config(), Namespace: m.namespace}); err != nil {
			b.Fatal(err)
		}
	}
	sync, stop := context.WithTimeout(ctx, 5*time.Minute)
	defer stop()
	for _, m := range members {
		c, err := f.Cluster(m.namespace)
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
