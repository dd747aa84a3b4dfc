package manager_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// A leader whose lease is taken by another process keeps running, by
// default: its controllers stop reconciling and its leader-only runnables
// are fenced but not canceled (a Runnable need not support a second
// Start), /healthz passes and /readyz names the standby state; once the
// other process's lease expires it is elected again and reconciles, its
// leader-only runnable started once.
func TestLeaderLostCampaignsAgain(t *testing.T) {
	ns := env.Namespace(t)
	m, st, starts, leaderCtx := leaderWithRunnable(t, ns, nil)
	eventually(t, "a to be elected", func() bool { return elected(m) })
	if err := m.UncachedClient().Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a to reconcile", func() bool { return st.spans.count("a") > 3 })

	// Another process takes the lease, as after a partition, and stops
	// renewing it: it expires 4s on.
	takeLease(t, ns, "thief", 4)
	eventually(t, "a to be fenced", func() bool { return manager.CheckLeadership(leaderCtx) != nil })
	fenced := time.Now()
	eventually(t, "/readyz to say a is a standby", func() bool {
		_, body := get(t, "http://"+m.HealthProbeAddr()+"/readyz?verbose")
		return strings.Contains(body, "standby")
	})
	if code, body := get(t, "http://"+m.HealthProbeAddr()+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while a standby = %d %s", code, body)
	}
	if l := gauge(t, m.Registry(), imetrics.Leader); l != 0 {
		t.Errorf("the deposed leader's %s = %v, want 0", imetrics.Leader, l)
	}
	select {
	case err := <-st.done:
		close(st.done)
		t.Fatalf("Start returned %v after the lease was taken", err)
	case <-leaderCtx.Done():
		t.Fatal("the leader-only runnable's context ended on the loss")
	default:
	}

	eventually(t, "a to be elected again and reconcile", func() bool { return st.spans.startedAfter("a", fenced) > 3 })
	if err := manager.CheckLeadership(leaderCtx); err != nil {
		t.Errorf("CheckLeadership once elected again = %v", err)
	}
	if l := gauge(t, m.Registry(), imetrics.Leader); l != 1 {
		t.Errorf("the re-elected leader's %s = %v, want 1", imetrics.Leader, l)
	}
	if n := starts.Load(); n != 1 {
		t.Errorf("the leader-only runnable was started %d times, want once", n)
	}
	if err := st.stop(t); err != nil {
		t.Errorf("Start = %v after a clean stop", err)
	}
}

// A leader that cannot renew (the API server out of reach) is fenced,
// /readyz says it waits for the API server, and /healthz passes; once
// renewals go through again it leads on, without Start returning.
func TestLeaderRidesOutUnreachableAPIServer(t *testing.T) {
	ns := env.Namespace(t)
	p := &partition{}
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(p.wrap)
	m, st, _, leaderCtx := leaderWithRunnable(t, ns, cfg)
	eventually(t, "a to be elected", func() bool { return elected(m) })
	if err := m.UncachedClient().Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a to reconcile", func() bool { return st.spans.count("a") > 3 })

	p.cut.Store(true)
	eventually(t, "the fence to close", func() bool { return manager.CheckLeadership(leaderCtx) != nil })
	eventually(t, "/readyz to say a waits for the API server", func() bool {
		code, body := get(t, "http://"+m.HealthProbeAddr()+"/readyz")
		return code == http.StatusInternalServerError && strings.Contains(body, "waiting for the API server")
	})
	// Past the lease: client-go's elector has given up by now.
	time.Sleep(4 * time.Second)
	if code, body := get(t, "http://"+m.HealthProbeAddr()+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while waiting for the API server = %d %s", code, body)
	}
	select {
	case err := <-st.done:
		close(st.done)
		t.Fatalf("Start returned %v while renewals failed", err)
	default:
	}
	p.cut.Store(false)
	back := time.Now()
	eventually(t, "a to lead and reconcile again", func() bool { return st.spans.startedAfter("a", back) > 3 })
	t.Logf("reconciling again %v after renewals went through again", time.Since(back).Round(time.Millisecond))
	if code, body := get(t, "http://"+m.HealthProbeAddr()+"/readyz/leader-election"); code != http.StatusOK {
		t.Errorf("/readyz/leader-election once leading again = %d %s", code, body)
	}
}

// withSpans is a started manager and the spans of its controller.
type withSpans struct {
	*started
	spans *spans
}

// leaderWithRunnable starts a candidate "a" (through cfg, or env's) with a
// controller recording its spans and a leader-only runnable; it returns
// how many times that runnable started, and the context of its first
// start.
func leaderWithRunnable(t *testing.T, ns string, cfg *rest.Config) (*manager.Manager, withSpans, *atomic.Int32, context.Context) {
	t.Helper()
	if cfg == nil {
		cfg = env.Config()
	}
	opts := leaderOptions(ns, false)
	opts.LeaderElection.Identity = "a"
	opts.Metrics.BindAddress = "127.0.0.1:0"
	opts.Health.BindAddress = "127.0.0.1:0"
	opts.Cache.Namespaces = []string{ns}
	m, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := &spans{}
	if _, err := manager.NewController(m, "outage", s.reconciler("a"), manager.For[*corev1.ConfigMap](nil)); err != nil {
		t.Fatal(err)
	}
	starts := &atomic.Int32{}
	ctxs := make(chan context.Context, 1)
	if err := m.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if starts.Add(1) == 1 {
			ctxs <- ctx
		}
		<-ctx.Done()
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	st := start(t, m)
	var ctx context.Context
	select {
	case ctx = <-ctxs:
	case <-time.After(30 * time.Second):
		t.Fatal("the leader-only runnable did not start within 30s")
	}
	return m, withSpans{st, s}, starts, ctx
}
