package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

const (
	floodQuietMembers = 4
	floodQuietRate    = 10                    // updates a second, each quiet member
	floodFactor       = 10                    // the flooding member's rate, in quiet rates
	floodKeys         = 200                   // distinct objects the flooding member updates
	floodQuietKeys    = 20                    // and each quiet member: an object is updated again only after 2s
	floodWork         = 12 * time.Millisecond // each reconcile's work
	floodRun          = 8 * time.Second
	floodAt           = "bench.opkit.dev/at" // the update's time, UnixNano
)

// BenchmarkFlood runs four quiet members at ten updates a second each, on
// 20 objects each, and one member at ten times that rate on 200 objects
// (so that a queued key is rarely updated again, which would hide its
// wait behind its newest write), through a controller
// of one worker whose reconciles take 12 ms (a flood it cannot keep up
// with), and reports the quiet members' p99 latency from an update's write
// to the start of its reconcile: with the flood, without it (the flooding
// member at the quiet rate: the floor), and the ratio. "fair" keys the
// queue on the member (fleet.Request.Tenant, with the spare worker that
// brings); "fifo" has no tenant, as a queue shared by every member without
// fairness serves them.
//
// "multicluster-runtime" runs the same workload through hack/bench/mcrcost:
// multicluster-runtime v0.22.0-beta.0's controller of one worker, with its
// default queue, each member a cluster whose cache holds its namespace. It
// reports the same figures, and opkit's fair p99 under the flood over
// multicluster-runtime's. Set OPKIT_BENCH_NO_MCR to skip it.
func BenchmarkFlood(b *testing.B) {
	var fairFlooded time.Duration
	for _, fair := range []bool{true, false} {
		name := "fifo"
		if fair {
			name = "fair"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				floor := floodP99(b, fair, 1)
				flooded := floodP99(b, fair, floodFactor)
				reportFlood(b, floor, flooded)
				if fair {
					fairFlooded = flooded
				}
			}
		})
	}
	if os.Getenv("OPKIT_BENCH_NO_MCR") != "" {
		return
	}
	mcr := buildMCRCost(b)
	b.Run("multicluster-runtime", func(b *testing.B) {
		for range b.N {
			floor := mcrFloodP99(b, mcr, 1)
			flooded := mcrFloodP99(b, mcr, floodFactor)
			reportFlood(b, floor, flooded)
			if fairFlooded > 0 {
				b.ReportMetric(float64(fairFlooded)/float64(flooded), "opkit-fair-flood-p99/mcr")
			}
		}
	})
}

func reportFlood(b *testing.B, floor, flooded time.Duration) {
	b.ReportMetric(float64(floor.Microseconds())/1000, "quiet-p99-floor-ms")
	b.ReportMetric(float64(flooded.Microseconds())/1000, "quiet-p99-flood-ms")
	b.ReportMetric(float64(flooded)/float64(floor), "flood/floor")
}

// floodNamespaces makes the members' namespaces and objects: four quiet,
// then the flooding one.
func floodNamespaces(b *testing.B) []string {
	members := make([]string, floodQuietMembers+1) // the last floods
	for i := range members {
		members[i] = env.Namespace(b)
		keys := floodQuietKeys
		if i == floodQuietMembers {
			keys = floodKeys
		}
		for k := range keys {
			if _, err := env.Client().CoreV1().ConfigMaps(members[i]).Create(b.Context(), &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(k)},
			}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return members
}

// mcrFloodP99 runs the workload once on multicluster-runtime, through
// bin, with the flooding member at factor times the quiet rate, and
// returns the quiet members' p99 latency.
func mcrFloodP99(b *testing.B, bin string, factor int) time.Duration {
	dir := b.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		b.Fatal(err)
	}
	list := filepath.Join(dir, "namespaces")
	if err := os.WriteFile(list, []byte(strings.Join(floodNamespaces(b), "\n")), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.CommandContext(b.Context(), bin, "-api-kubeconfig", kubeconfig, "-namespaces", list, "-flood-factor", strconv.Itoa(factor))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("hack/bench/mcrcost -flood-factor %d: %v\n%s", factor, err, stderr.String())
	}
	var m struct {
		QuietP99Seconds            float64
		QuietWritesPerSecondMember float64
		FloodWritesPerSecond       float64
	}
	if err := json.Unmarshal(out, &m); err != nil || m.QuietP99Seconds <= 0 {
		b.Fatalf("hack/bench/mcrcost -flood-factor %d printed %q (%v)", factor, out, err)
	}
	b.ReportMetric(m.QuietWritesPerSecondMember, fmt.Sprintf("quiet-writes/s/member(x%d)", factor))
	b.ReportMetric(m.FloodWritesPerSecond, fmt.Sprintf("flood-writes/s(x%d)", factor))
	return time.Duration(m.QuietP99Seconds * float64(time.Second))
}

// floodP99 runs the workload once with the flooding member at factor
// times the quiet rate, and returns the quiet members' p99 latency.
func floodP99(b *testing.B, fair bool, factor int) time.Duration {
	f := newFleet(b, fleet.Options{ProbeInterval: -1})
	cms, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	members := floodNamespaces(b)
	flooding := members[floodQuietMembers]
	var mu sync.Mutex
	var latencies []time.Duration
	r := reconcile.Func[fleet.Request](func(_ context.Context, req fleet.Request) (reconcile.Result, error) {
		start := time.Now()
		l, err := cms.In(req.Cluster)
		if err != nil {
			return reconcile.Done(), err
		}
		cm, err := l.Get(req.Namespace, req.Name)
		if err != nil {
			return reconcile.Done(), nil
		}
		if at, err := strconv.ParseInt(cm.Annotations[floodAt], 10, 64); err == nil && req.Cluster != flooding {
			mu.Lock()
			latencies = append(latencies, start.Sub(time.Unix(0, at)))
			mu.Unlock()
		}
		time.Sleep(floodWork)
		return reconcile.Done(), nil
	})
	opts := controller.Options[fleet.Request]{}
	if fair {
		opts.Tenant = fleet.Request.Tenant
	}
	ctl, err := controller.New[fleet.Request]("flood", fleet.Reconciler(f, r), opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := ctl.Watch(fleet.Watch(cms, fleet.EnqueueObject[*corev1.ConfigMap]())); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { _ = f.Start(ctx) })
	wg.Go(func() { _ = ctl.Start(ctx) })
	for _, m := range members {
		if err := f.Engage(ctx, fleet.Member{Name: m, Config: env.Config(), Namespace: m}); err != nil {
			b.Fatal(err)
		}
		if err := mustCluster(b, f, m).Cache().WaitForSync(ctx); err != nil {
			b.Fatal(err)
		}
	}

	run, stop := context.WithTimeout(ctx, floodRun)
	defer stop()
	var drivers sync.WaitGroup
	var quietWrites, floodWrites atomic.Int64
	begin := time.Now()
	for i, m := range members {
		if i < floodQuietMembers {
			drivers.Go(func() { drive(run, b, m, floodQuietRate, 0, floodQuietKeys, &quietWrites) })
			continue
		}
		// Writers enough that the API server's answer time does not cap
		// the flood's rate, each on its own share of the keys.
		writers := 1
		if factor > 1 {
			writers = 4
		}
		for w := range writers {
			drivers.Go(func() {
				drive(run, b, m, floodQuietRate*factor/writers, w*floodKeys/writers, floodKeys/writers, &floodWrites)
			})
		}
	}
	drivers.Wait()
	elapsed := time.Since(begin).Seconds()
	b.ReportMetric(float64(quietWrites.Load())/elapsed/floodQuietMembers, fmt.Sprintf("quiet-writes/s/member(x%d)", factor))
	b.ReportMetric(float64(floodWrites.Load())/elapsed, fmt.Sprintf("flood-writes/s(x%d)", factor))
	mu.Lock()
	defer mu.Unlock()
	if len(latencies) < 10 {
		b.Fatalf("%d quiet reconciles measured", len(latencies))
	}
	slices.Sort(latencies)
	return latencies[len(latencies)*99/100]
}

// drive updates keys from..from+keys-1 of the member, round-robin, at
// rate a second until ctx ends, each with its write time, counting the
// writes in n.
func drive(ctx context.Context, b *testing.B, ns string, rate, from, keys int, n *atomic.Int64) {
	t := time.NewTicker(time.Second / time.Duration(rate))
	defer t.Stop()
	cms := env.Client().CoreV1().ConfigMaps(ns)
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(from+i%keys),
			Annotations: map[string]string{floodAt: strconv.FormatInt(time.Now().UnixNano(), 10)}}}
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			if ctx.Err() == nil {
				b.Error(fmt.Errorf("update %s/%s: %w", ns, cm.Name, err))
			}
			return
		}
		n.Add(1)
	}
}
