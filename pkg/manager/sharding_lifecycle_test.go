package manager_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// /readyz fails, saying why, while the replica is not a member of its
// shard group: here its Lease can never be written, since its namespace
// does not exist.
func TestShardingNotReadyUntilMember(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{Sharding: manager.ShardingOptions{
		Enabled: true, Group: "unready", Namespace: "no-such-namespace",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
	}})
	start(t, m)
	var body string
	eventually(t, "the cache to sync", func() bool {
		var code int
		code, body = get(t, "http://"+m.HealthProbeAddr()+"/readyz")
		if code == http.StatusOK {
			t.Fatalf("/readyz passes for a replica that holds no slot:\n%s", body)
		}
		return strings.Contains(body, "[+]cache-sync ok")
	})
	if want := "[-]sharding failed: not a member of the shard group yet"; !strings.Contains(body, want) {
		t.Errorf("/readyz says:\n%s\nwant a line starting %q", body, want)
	}
}

// With leader election too, sharded controllers run on every replica,
// leader or not, while other leader-only runnables run on the leader only.
func TestShardingWithLeaderElection(t *testing.T) {
	ns := env.Namespace(t)
	log := newShardLog()
	var mu sync.Mutex
	var leaders []string
	var ms []*shardedManager
	for _, who := range []string{"l0", "l1"} {
		m := newManager(t, ns, manager.Options{
			Sharding: manager.ShardingOptions{
				Enabled: true, Group: "both", Namespace: ns, Identity: who, Slots: shardSlots,
				LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
			},
			LeaderElection: manager.LeaderElectionOptions{Enabled: true, Name: "both-leader", Namespace: ns, Identity: who},
		})
		c := &converger{who: who, log: log, m: m}
		// A predicate on For: the gate then records slots through a
		// source of its own.
		if _, err := manager.NewController(m, shardCtrl, c, manager.For(&c.lister, source.ResourceVersionChanged)); err != nil {
			t.Fatal(err)
		}
		if err := m.Add(manager.RunnableFunc(func(ctx context.Context) error {
			mu.Lock()
			leaders = append(leaders, who)
			mu.Unlock()
			<-ctx.Done()
			return nil
		})); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, &shardedManager{who: who, m: m, s: start(t, m)})
	}
	settled(t, ms...)
	converge(t, ns, log, 40, "1")
	log.check(t)
	applied := map[string]int{}
	log.mu.Lock()
	for _, who := range log.applied {
		applied[who[0]]++
	}
	log.mu.Unlock()
	if applied["l0"] == 0 || applied["l1"] == 0 {
		t.Errorf("changes applied per replica %v: want both to reconcile their slots' keys, leader or not", applied)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaders) != 1 {
		t.Errorf("the leader-only runnable ran on %v, want exactly one replica", leaders)
	}
}

// /readyz fails while the replica holds slots its cache does not: here
// RBAC lets it keep its Lease but not list ConfigMaps, so the cache never
// holds its slots' ConfigMaps.
func TestShardingNotReadyUntilCacheHoldsSlots(t *testing.T) {
	ns := env.Namespace(t)
	const user = "opkit-sharded-no-configmaps"
	rbac := env.Client().RbacV1()
	if _, err := rbac.Roles(ns).Create(t.Context(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "leases-only", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			Verbs: []string{"get", "list", "watch", "create", "update", "delete"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "leases-only", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "leases-only"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := env.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	m, err := manager.New(cfg, manager.Options{
		Cache:   cache.Options{Namespaces: []string{ns}},
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "127.0.0.1:0"},
		Sharding: manager.ShardingOptions{Enabled: true, Group: "nocache", Namespace: ns, Slots: 4,
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := reconcile.Func[reconcile.Request](func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Done(), nil })
	if _, err := manager.NewController(m, "nocache", r, manager.For[*corev1.ConfigMap](nil)); err != nil {
		t.Fatal(err)
	}
	start(t, m)
	want := "[-]sharding failed: the cache does not hold slots [0 1 2 3] yet"
	var body string
	eventually(t, "the replica to hold its slots", func() bool {
		var code int
		code, body = get(t, "http://"+m.HealthProbeAddr()+"/readyz")
		if code == http.StatusOK {
			t.Fatalf("/readyz passes while the cache cannot list its slots' objects:\n%s", body)
		}
		return strings.Contains(body, want)
	})
}
