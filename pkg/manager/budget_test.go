package manager_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// configMaps creates n ConfigMaps in ns, for a hammer to write.
func configMaps(t testing.TB, cs kubernetes.Interface, ns string, n int) {
	t.Helper()
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i), Namespace: ns}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// hammering starts m with a hammer controller of workers workers over
// ns's ConfigMaps, writing through the manager's uncached client.
func hammering(t *testing.T, m *manager.Manager, workers int) (*hammer, *started) {
	t.Helper()
	h := &hammer{c: m.UncachedClient()}
	ctl, err := manager.NewController(m, "hammer", h, manager.For[*corev1.ConfigMap](nil), manager.APIWeight(2),
		manager.WithOptions(controller.Options[reconcile.Request]{MaxConcurrentReconciles: workers}))
	if err != nil {
		t.Fatal(err)
	}
	h.queue = ctl.Queue()
	return h, start(t, m)
}

// With the budget's reconcile lane saturated (2 requests a second, 30
// workers writing), the leader still renews its Lease in time: renewals
// are the lease lane's, which never waits. The reconciles' requests
// waited; the renewals were counted and never did.
func TestBudgetNeverHoldsUpRenewals(t *testing.T) {
	const workers = 30
	ns := env.Namespace(t)
	cs := kubernetes.NewForConfigOrDie(env.Config())
	configMaps(t, cs, ns, workers)
	m := newManager(t, ns, manager.Options{
		APIBudget: manager.APIBudgetOptions{QPS: 2, Burst: 2},
		LeaderElection: manager.LeaderElectionOptions{
			Enabled: true, Name: "budget-lanes", Namespace: ns, Identity: "leader",
			LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: 500 * time.Millisecond,
		},
		ShutdownTimeout: time.Second,
	})
	h, st := hammering(t, m, workers)
	renewalsUnderLoad(t, cs, ns, "budget-lanes", h, workers/2, st)
	reg := m.Registry()
	if n := counter(t, reg, "opkit_api_budget_tokens_total", "lane", "lease"); n < 5 {
		t.Errorf("lease tokens: %v, want at least the 5 renewals seen", n)
	}
	if n := series(t, reg, "opkit_api_budget_wait_seconds", "lane", "lease").GetHistogram().GetSampleCount(); n != 0 {
		t.Errorf("%d lease requests waited for the budget", n)
	}
	if n := series(t, reg, "opkit_api_budget_wait_seconds", "lane", "reconcile", "controller", "hammer").GetHistogram().GetSampleCount(); n == 0 {
		t.Error("no reconcile request of the hammer waited: the lane was not saturated, and the test shows nothing")
	}
	if r := gauge(t, reg, "opkit_api_budget_configured_rate"); r != 2 {
		t.Errorf("configured rate %v, want 2", r)
	}
}

// With the budget saturated by a hammer (2 requests a second, 30 workers
// writing), the workers of a quiet controller whose reconciles send no
// request at all (served from the cache) wait for the budget before they
// take each key, in the quiet controller's share, and give each token
// back: they waited, and the budget let none of their requests through.
func TestWorkersWaitForTheBudgetBeforeTakingKeys(t *testing.T) {
	const workers = 30
	ns := env.Namespace(t)
	cs := kubernetes.NewForConfigOrDie(env.Config())
	configMaps(t, cs, ns, workers)
	m := newManager(t, ns, manager.Options{APIBudget: manager.APIBudgetOptions{QPS: 2, Burst: 2}, ShutdownTimeout: time.Second})
	var reconciled atomic.Int64
	quiet := reconcile.Func[reconcile.Request](func(context.Context, reconcile.Request) (reconcile.Result, error) {
		reconciled.Add(1)
		return reconcile.Done(), nil
	})
	if _, err := manager.NewController(m, "quiet", quiet, manager.For[*corev1.ConfigMap](nil)); err != nil {
		t.Fatal(err)
	}
	hammering(t, m, workers)
	reg := m.Registry()
	eventually(t, "the quiet controller's workers to wait for the budget, and reconcile", func() bool {
		return series(t, reg, "opkit_api_budget_wait_seconds", "lane", "reconcile", "controller", "quiet").GetHistogram().GetSampleCount() > 0 &&
			reconciled.Load() > 0
	})
	if n := counter(t, reg, "opkit_api_budget_tokens_total", "lane", "reconcile", "controller", "quiet"); n != 0 {
		t.Errorf("the budget let %v requests of the quiet controller through, which sent none", n)
	}
}

// limitUser makes the API server's priority and fairness reject user's
// requests beyond a concurrency of a few (a priority level of one share,
// rejecting rather than queueing), and lets user do anything RBAC allows
// cluster-admin; all of it goes at the end of the test.
func limitUser(t testing.TB, cs kubernetes.Interface, user string) {
	t.Helper()
	ctx := t.Context()
	plc := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](1), LendablePercent: ptr.To[int32](0), BorrowingLimitPercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: user},
			MatchingPrecedence:         100,
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"},
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if _, err := cs.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, plc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.FlowcontrolV1().PriorityLevelConfigurations().Delete(t.Context(), user, metav1.DeleteOptions{})
	})
	if _, err := cs.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.FlowcontrolV1().FlowSchemas().Delete(t.Context(), user, metav1.DeleteOptions{}) })
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoleBindings().Delete(t.Context(), user, metav1.DeleteOptions{}) })
}

// The API server's priority and fairness rejects an operator's flood with
// 429s: the budget, with no rate fixed (the default), narrows its window
// of requests in flight, since the priority level limits requests at
// once, and leaves the rate unlimited; and logs what the server said.
func TestServerPushbackLowersTheBudget(t *testing.T) {
	const workers, user = 30, "opkit-budget-pushback"
	ns := env.Namespace(t)
	cs := kubernetes.NewForConfigOrDie(env.Config())
	configMaps(t, cs, ns, workers)
	limitUser(t, cs, user)
	cfg := rest.CopyConfig(env.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	var logs logBuffer
	m, err := manager.New(cfg, manager.Options{
		Cache:   cache.Options{Namespaces: []string{ns}},
		Metrics: manager.MetricsOptions{BindAddress: "127.0.0.1:0"}, Health: manager.HealthOptions{BindAddress: "127.0.0.1:0"},
		Logger: logs.logger(), ShutdownTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := m.Registry()
	if r := gauge(t, reg, "opkit_api_budget_rate"); !math.IsInf(r, 1) {
		t.Fatalf("rate before any pushback: %v, want +Inf (no rate fixed)", r)
	}
	hammering(t, m, workers)
	eventually(t, "a 429 to narrow the budget's window", func() bool {
		return counter(t, reg, "opkit_api_budget_pushbacks_total", "lane", "reconcile", "controller", "hammer", "reason", "429") > 0 &&
			gauge(t, reg, "opkit_api_budget_concurrency_limit") < 4
	})
	if r := gauge(t, reg, "opkit_api_budget_rate"); !math.IsInf(r, 1) {
		t.Errorf("rate after priority and fairness's 429s: %v, want none: the level limits requests at once", r)
	}
	line := ""
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, "The API server pushed back") {
			line = l
			break
		}
	}
	if !strings.Contains(line, `"reason"="429"`) || !strings.Contains(line, `"status"=429`) || !strings.Contains(line, `"priorityLevelUID"="`) || strings.Contains(line, `"priorityLevelUID"=""`) {
		t.Errorf("the pushback's log line: %q, want reason and status 429 and the priority level's UID", line)
	}
	t.Logf("%s; window now %v requests in flight", line, gauge(t, reg, "opkit_api_budget_concurrency_limit"))
}

// Three controllers flooding at once (weights 1, 1 and 2) share a budget of
// 20 requests a second by weight, and together never exceed it. Shares are
// ratios of tokens counted while all three waited, so the machine's speed
// does not move them; the total is bounded by the bucket itself.
func TestBudgetSharesByWeight(t *testing.T) {
	const (
		workers = 10
		qps     = 20
	)
	ns := env.Namespace(t)
	cs := kubernetes.NewForConfigOrDie(env.Config())
	configMaps(t, cs, ns, workers)
	m := newManager(t, ns, manager.Options{APIBudget: manager.APIBudgetOptions{QPS: qps, Burst: 1}, ShutdownTimeout: time.Second})
	weights := map[string]float64{"flood-a": 1, "flood-b": 1, "flood-c": 2}
	for name, w := range weights {
		h := &hammer{c: m.UncachedClient()}
		if _, err := manager.NewController(m, name, h, manager.For[*corev1.ConfigMap](nil), manager.APIWeight(w),
			manager.WithOptions(controller.Options[reconcile.Request]{MaxConcurrentReconciles: workers})); err != nil {
			t.Fatal(err)
		}
	}
	start(t, m)
	reg := m.Registry()
	waited := func(name string) uint64 {
		return series(t, reg, "opkit_api_budget_wait_seconds", "lane", "reconcile", "controller", name).GetHistogram().GetSampleCount()
	}
	eventually(t, "every controller to wait for the budget", func() bool {
		return waited("flood-a") > workers && waited("flood-b") > workers && waited("flood-c") > workers
	})
	tokens := func() map[string]float64 {
		out := map[string]float64{}
		for name := range weights {
			out[name] = counter(t, reg, "opkit_api_budget_tokens_total", "lane", "reconcile", "controller", name)
		}
		return out
	}
	before, began := tokens(), time.Now()
	time.Sleep(5 * time.Second) // a window to count in, not a bound
	after, took := tokens(), time.Since(began)
	total := 0.0
	for name := range weights {
		total += after[name] - before[name]
	}
	for name, w := range weights {
		share, want := (after[name]-before[name])/total, w/4
		t.Logf("%s (weight %v): %.0f tokens, %.1f%% of the reconcile lane's (weight's share %.0f%%)", name, w, after[name]-before[name], 100*share, 100*want)
		if math.Abs(share-want) > 0.1*want {
			t.Errorf("%s's share %.1f%%, want %.0f%% ±10%%", name, 100*share, 100*want)
		}
	}
	rate := total / took.Seconds()
	t.Logf("the three together: %.1f requests a second over %v, budget %d", rate, took.Round(time.Millisecond), qps)
	if total > qps*took.Seconds()*1.05+2 {
		t.Errorf("the three sent %.0f requests in %v, over the budget of %d a second", total, took, qps)
	}
}
