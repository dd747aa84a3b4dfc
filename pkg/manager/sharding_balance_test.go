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
// others read them; the changes are still applied exactly once.
func TestShardedBalanceWritesLoads(t *testing.T) {
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
			Cache: cache.Options{Namespaces: []string{ns}},
		})
		c := &converger{who: who, log: log, m: m}
		if _, err := manager.NewController(m, shardCtrl, c, manager.For(&c.lister)); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, &shardedManager{who: who, m: m, s: start(t, m)})
	}
	settled(t, ms...)
	converge(t, ns, log, 40, "1")
	eventually(t, "both Leases to carry a load for each slot held, some of it above 0", func() bool {
		leases, err := env.Client().CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{LabelSelector: membership.LabelGroup + "=conv"})
		if err != nil {
			t.Fatal(err)
		}
		if len(leases.Items) != 2 {
			return false
		}
		for _, l := range leases.Items {
			claims := strings.Split(l.Annotations[membership.AnnotationClaims], ",")
			loads := strings.Split(l.Annotations[membership.AnnotationLoad], ",")
			if len(loads) != len(claims) {
				return false
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
			if sum <= 0 {
				return false
			}
		}
		return true
	})
	log.check(t)
}
