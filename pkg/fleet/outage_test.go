package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// startEnvs starts n control planes at once and stops them when tb ends.
func startEnvs(tb testing.TB, n int) []*testenv.Environment {
	tb.Helper()
	envs := make([]*testenv.Environment, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range envs {
		wg.Go(func() { envs[i], errs[i] = testenv.Start(testenv.Options{}) })
	}
	wg.Wait()
	for _, e := range envs {
		if e != nil {
			tb.Cleanup(func() {
				if err := e.Stop(); err != nil {
					tb.Errorf("stop a member's control plane: %v", err)
				}
			})
		}
	}
	if err := errors.Join(errs...); err != nil {
		tb.Fatalf("start the members' control planes: %v", err)
	}
	return envs
}

// putSource creates or updates the ConfigMap "source" of ns with v.
func putSource(t *testing.T, cs kubernetes.Interface, ns, v string) {
	t.Helper()
	cms := cs.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(t.Context(), "source", metav1.GetOptions{})
	if err != nil {
		_, err = cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "source"}, Data: map[string]string{"v": v}}, metav1.CreateOptions{})
	} else {
		cm.Data = map[string]string{"v": v}
		_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("put source %s=%s: %v", ns, v, err)
	}
}

// waitFor polls cond until it holds, for up to two minutes: the machine
// may be busy.
func waitFor(t *testing.T, what string, cond func(context.Context) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return cond(ctx), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// copied reports whether ns's copy on cs holds v.
func copied(cs kubernetes.Interface, ns, v string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "copy", metav1.GetOptions{})
		return err == nil && cm.Data["v"] == v
	}
}

// ready reports whether the manager's /readyz answers 200.
func ready(ctx context.Context, mgr *manager.Manager) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+mgr.HealthProbeAddr()+"/readyz?verbose", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s: %s", resp.Status, body)
	}
	return nil
}

// A member whose API server stops is reported unreachable (Health, its
// condition, its metric) while the other members, each on an API server
// of its own, go on being reconciled; nothing exits and the operator stays
// ready; once the server is back the member is reachable again, its
// watches resume and its keys are reconciled.
func TestMemberAPIServerStopped(t *testing.T) {
	envs := append([]*testenv.Environment{env}, startEnvs(t, 2)...)
	names := []string{"a", "b", "down"}
	namespaces := make([]string, len(envs))
	for i, e := range envs {
		namespaces[i] = e.Namespace(t)
		putSource(t, e.Client(), namespaces[i], "1")
	}
	down, downNS := envs[2], namespaces[2]

	reg := prometheus.NewRegistry()
	f := newFleet(t, fleet.Options{ProbeInterval: 200 * time.Millisecond, Registerer: reg})
	cms, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(env.Config(), manager.Options{
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "127.0.0.1:0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := controller.New[fleet.Request]("copier", fleet.Reconciler(f, copier{cms}), controller.Options[fleet.Request]{Tenant: fleet.Request.Tenant})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Watch(fleet.Watch(cms, fleet.EnqueueObject[*corev1.ConfigMap]())); err != nil {
		t.Fatal(err)
	}
	for _, r := range []manager.Runnable{f, ctl} {
		if err := mgr.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() { exited <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-exited; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	for i, e := range envs {
		if err := f.Engage(ctx, fleet.Member{Name: names[i], Config: e.Config(), Namespace: namespaces[i]}); err != nil {
			t.Fatal(err)
		}
	}
	for i, e := range envs {
		waitFor(t, "first copy in "+names[i], copied(e.Client(), namespaces[i], "1"))
	}
	waitFor(t, "ready", func(ctx context.Context) bool { return ready(ctx, mgr) == nil })

	if err := down.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = down.StartAPIServer()
		}
	})
	waitFor(t, "the stopped member reported unreachable", func(context.Context) bool {
		return !mustCluster(t, f, "down").Health().Reachable
	})
	checkReachable(t, reg, f, false)
	// The others go on, each write reconciled.
	for round := 2; round <= 4; round++ {
		v := fmt.Sprint(round)
		for i := range 2 {
			putSource(t, envs[i].Client(), namespaces[i], v)
		}
		for i := range 2 {
			waitFor(t, "copy "+v+" in "+names[i]+" while a member is down", copied(envs[i].Client(), namespaces[i], v))
		}
		if err := ready(t.Context(), mgr); err != nil {
			t.Errorf("not ready while a member is down: %v", err)
		}
	}
	select {
	case err := <-exited:
		t.Fatalf("the manager exited while a member was down: %v", err)
	default:
	}

	if err := down.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	stopped = false
	waitFor(t, "the member reachable again", func(context.Context) bool {
		return mustCluster(t, f, "down").Health().Reachable
	})
	checkReachable(t, reg, f, true)
	putSource(t, down.Client(), downNS, "back")
	waitFor(t, "copy in the member back", copied(down.Client(), downNS, "back"))
	if err := ready(t.Context(), mgr); err != nil {
		t.Errorf("not ready once the member is back: %v", err)
	}
}

// checkReachable checks the member "down"'s condition and metric, and the
// others' metrics.
func checkReachable(t *testing.T, reg *prometheus.Registry, f *fleet.Fleet, reachable bool) {
	t.Helper()
	h := mustCluster(t, f, "down").Health()
	c := h.Condition()
	status, reason, value := metav1.ConditionFalse, fleet.ReasonUnreachable, 0
	if reachable {
		status, reason, value = metav1.ConditionTrue, fleet.ReasonReady, 1
	}
	if c.Type != fleet.ConditionReachable || c.Status != status || c.Reason != reason || !c.LastTransitionTime.Time.Equal(h.Since.Truncate(time.Second)) {
		t.Errorf("the member's condition: %+v, want %s %s %s since %v", c, fleet.ConditionReachable, status, reason, h.Since)
	}
	if !reachable && !strings.Contains(c.Message, "down") {
		t.Errorf("the unreachable member's condition's message %q does not name it", c.Message)
	}
	want := fmt.Sprintf(`
# HELP opkit_fleet_member_reachable 1 if the member cluster's API server answered the fleet's last probe ready, else 0, by cluster.
# TYPE opkit_fleet_member_reachable gauge
opkit_fleet_member_reachable{cluster="a"} 1
opkit_fleet_member_reachable{cluster="b"} 1
opkit_fleet_member_reachable{cluster="down"} %d
`, value)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), fleet.MetricMemberReachable); err != nil {
		t.Error(err)
	}
}

// A reconcile in flight when its member's API server stops answering (a
// server hung or cut off, whose connections stay open) ends once the
// member is reported unreachable, with a cause wrapping
// fleet.ErrUnreachable: its worker does not wait on the member for as long
// as the client would.
func TestReconcileEndsWhenItsMemberHangs(t *testing.T) {
	hung := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hung }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hung) })
	f := newFleet(t, fleet.Options{ProbeInterval: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	if err := f.Engage(ctx, fleet.Member{Name: "hung", Config: cfg, Namespace: "ns"}); err != nil {
		t.Fatal(err)
	}
	type outcome struct{ err, cause error }
	asked, done := make(chan struct{}), make(chan outcome, 1)
	r := fleet.Reconciler(f, reconcile.Func[fleet.Request](func(ctx context.Context, req fleet.Request) (reconcile.Result, error) {
		close(asked)
		err := fleet.ClusterFrom(ctx).Client().Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name}, &corev1.ConfigMap{})
		done <- outcome{err, context.Cause(ctx)}
		return reconcile.Done(), err
	}))
	go func() {
		_, _ = r.Reconcile(ctx, fleet.Request{Cluster: "hung", Request: reconcile.Request{Namespace: "ns", Name: "source"}})
	}()
	select {
	case <-asked:
	case <-time.After(2 * time.Minute):
		t.Fatal("the reconcile never started")
	}
	go func() { _ = f.Start(ctx) }() // the probes begin
	select {
	case o := <-done:
		if o.err == nil || !errors.Is(o.cause, fleet.ErrUnreachable) {
			t.Errorf("the reconcile ended with %v, its context's cause %v; want an error, the cause wrapping ErrUnreachable", o.err, o.cause)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the reconcile still waits on a member reported unreachable (%+v)", mustCluster(t, f, "hung").Health())
	}
}
