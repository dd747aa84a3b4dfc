package manager_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// hammer is a reconciler that writes its ConfigMap at every reconcile and
// reconciles it again at once, so that its workers always wait on the
// client's rate limiter, or on the API budget before they take a key;
// inFlight counts the writes sent and not returned, and queue, when set,
// is its controller's.
type hammer struct {
	c        client.Client
	inFlight atomic.Int32
	writes   atomic.Int64
	queue    *queue.Queue[reconcile.Request]
}

// waiting counts the writes that wait: sent and not returned (a
// client-side limiter holds them in their reconciles), or of keys ready in
// the queue (the budget holds workers before they take keys).
func (h *hammer) waiting() int32 {
	n := h.inFlight.Load()
	if h.queue != nil {
		n += int32(h.queue.Len())
	}
	return n
}

func (h *hammer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	h.inFlight.Add(1)
	defer h.inFlight.Add(-1)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"opkit.dev/n":"%d"}}}`, h.writes.Add(1))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
	if err := h.c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.RequeueAfter(time.Millisecond), nil
}

// A leader, and a shard member, whose reconciles keep the manager's
// client-side rate limiter busy (1 request a second, many waiting) still
// renew their Leases: the renewals have a client, a rate limiter and a
// connection of their own. Without, a renewal waits behind every write
// queued before it, longer than RenewDeadline, and the lease is lost.
func TestLeaseRenewalsHaveTheirOwnBudget(t *testing.T) {
	const (
		lease   = 6 * time.Second
		renew   = 4 * time.Second
		retry   = 500 * time.Millisecond
		workers = 30
	)
	for _, mode := range []struct {
		name  string
		lease string
		opts  func(ns string) manager.Options
	}{
		{"leader election", "budget", func(ns string) manager.Options {
			return manager.Options{LeaderElection: manager.LeaderElectionOptions{
				Enabled: true, Name: "budget", Namespace: ns, Identity: "leader",
				LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry,
			}}
		}},
		{"sharding", "budget-member", func(ns string) manager.Options {
			return manager.Options{Sharding: manager.ShardingOptions{
				Enabled: true, Group: "budget", Namespace: ns, Identity: "member", Slots: 1,
				LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry,
			}}
		}},
	} {
		for _, limit := range []struct {
			name   string
			config func(*rest.Config)
		}{
			{"QPS and Burst", func(c *rest.Config) { c.QPS, c.Burst = 1, 1 }},
			{"a RateLimiter", func(c *rest.Config) { c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(1, 1) }},
		} {
			t.Run(mode.name+"/"+limit.name, func(t *testing.T) {
				ns := env.Namespace(t)
				cs := kubernetes.NewForConfigOrDie(env.Config())
				for i := range workers {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i), Namespace: ns}}
					if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				cfg := rest.CopyConfig(env.Config())
				limit.config(cfg)
				opts := mode.opts(ns)
				opts.Cache = cache.Options{Namespaces: []string{ns}}
				opts.Metrics.BindAddress, opts.Health.BindAddress = "127.0.0.1:0", "127.0.0.1:0"
				// The writes waiting at the stop need not be drained.
				opts.ShutdownTimeout = time.Second
				m, err := manager.New(cfg, opts)
				if err != nil {
					t.Fatal(err)
				}
				h := &hammer{c: m.UncachedClient()}
				ctl, err := manager.NewController(m, "hammer", h, manager.For[*corev1.ConfigMap](nil),
					manager.WithOptions(controller.Options[reconcile.Request]{MaxConcurrentReconciles: workers}))
				if err != nil {
					t.Fatal(err)
				}
				h.queue = ctl.Queue()
				st := start(t, m)
				renewalsUnderLoad(t, cs, ns, mode.lease, h, workers/2, st)
			})
		}
	}
}

// renewalsUnderLoad waits until the Lease name has been renewed 5 times
// while at least busy of h's writes were waiting (hammer.waiting). It fails the test if
// Start returns first (the lease lost), or if a renewal comes no sooner
// than the lease's duration after the one before, by the Lease's times
// or the test's clock: a standby could have taken over.
func renewalsUnderLoad(t *testing.T, cs kubernetes.Interface, ns, name string, h *hammer, busy int32, st *started) {
	t.Helper()
	const want = 5
	var last time.Time // the last renewTime seen
	var seen time.Time // when it was seen, on the test's clock
	renewals, began := 0, time.Now()
	for renewals < want {
		select {
		case err := <-st.done:
			close(st.done)
			t.Fatalf("Start returned %v after %d renewals under load (%d writes made): the reconciles' traffic delayed the renewals", err, renewals, h.writes.Load())
		case <-time.After(50 * time.Millisecond):
		}
		lease, err := cs.CoordinationV1().Leases(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil || lease.Spec.RenewTime == nil {
			if time.Since(began) > time.Minute {
				t.Fatalf("no Lease %s renewed a minute after Start: %v", name, err)
			}
			continue
		}
		d := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
		renewed := lease.Spec.RenewTime.Time
		if !renewed.After(last) {
			if !seen.IsZero() && time.Since(seen) >= d {
				t.Fatalf("not renewed for %v, the lease's duration, after %d renewals under load (%d writes made)", time.Since(seen).Round(time.Millisecond), renewals, h.writes.Load())
			}
			continue
		}
		loaded := h.waiting() >= busy
		if loaded && !last.IsZero() {
			if gap := renewed.Sub(last); gap >= d {
				t.Errorf("renewed %v after the renewal before, no sooner than the lease's duration (%v)", gap, d)
			}
		}
		if loaded {
			renewals++
		}
		last, seen = renewed, time.Now()
	}
	t.Logf("%d renewals while at least %d writes waited (%d writes made)", renewals, busy, h.writes.Load())
}
