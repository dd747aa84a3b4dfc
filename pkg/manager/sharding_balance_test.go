package manager_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/internal/sharding/membership"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// With Options.Sharding.Balance each replica times its reconciles by
// slot and writes the loads of the slots it holds to its Lease, where the
// others read them; the changes are still applied exactly once. Where the
// API server does not filter by shard selector each move would list every
// object, and that time would read as load: the replicas measure none,
// and balance by count.
func TestShardedBalanceWritesLoads(t *testing.T) {
	filtered, _ := env.FeatureGate("ShardedListAndWatch")
	for _, tc := range []struct {
		name   string
		filter cache.ServerFilter
		loads  bool
	}{{"detect", cache.ServerFilterDetect, filtered}, {"off", cache.ServerFilterOff, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			log := newShardLog()
			var ms []*shardedManager
			for _, who := range []string{"a", "b"} {
				m := newManager(t, ns, manager.Options{
					Sharding: manager.ShardingOptions{
						Enabled: true, Group: "conv", Namespace: ns, Identity: who, Slots: shardSlots,
						LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
						Balance: manager.BalanceOptions{Enabled: true, HalfLife: time.Hour},
					},
					Cache: cache.Options{Namespaces: []string{ns}, Sharding: cache.ShardingOptions{ServerFilter: tc.filter}},
				})
				c := &converger{who: who, log: log, m: m}
				if _, err := manager.NewController(m, shardCtrl, c, manager.For(&c.lister)); err != nil {
					t.Fatal(err)
				}
				ms = append(ms, &shardedManager{who: who, m: m, s: start(t, m)})
			}
			settled(t, ms...)
			converge(t, ns, log, 40, "1")
			if tc.loads {
				eventually(t, "both Leases to carry a load for each slot held, some of it above 0", func() bool {
					sums := leaseLoads(t, ns)
					return len(sums) == 2 && sums[0] > 0 && sums[1] > 0
				})
			} else {
				// Four renewals after the reconciles: loads measured would
				// be in the Leases by now (above, within one).
				time.Sleep(2 * time.Second)
				if sums := leaseLoads(t, ns); len(sums) != 2 || sums[0] != 0 || sums[1] != 0 {
					t.Errorf("without server filtering the Leases carry loads %v, want none measured", sums)
				}
			}
			log.check(t)
		})
	}
}

// leaseLoads returns, for each Lease of the group conv in ns whose load
// annotation has an entry for each slot it claims, the sum of its loads.
func leaseLoads(t *testing.T, ns string) []float64 {
	t.Helper()
	leases, err := env.Client().CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{LabelSelector: membership.LabelGroup + "=conv"})
	if err != nil {
		t.Fatal(err)
	}
	var sums []float64
	for _, l := range leases.Items {
		claims := strings.Split(l.Annotations[membership.AnnotationClaims], ",")
		loads := strings.Split(l.Annotations[membership.AnnotationLoad], ",")
		if len(loads) != len(claims) {
			continue
		}
		sum := 0.0
		for _, p := range loads {
			_, v, _ := strings.Cut(p, "=")
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("Lease %s: load %q: %v", l.Name, p, err)
			}
			sum += f
		}
		sums = append(sums, sum)
	}
	return sums
}
