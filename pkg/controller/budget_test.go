package controller_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/internal/budget"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// budgeted is a controller named hammer, of one worker, whose API requests
// spend a budget of 1 request a second with a burst of 1, on a fake clock,
// its bucket empty: a token comes only when the test steps the clock.
// Each reconcile records its key, then reads the default namespace from
// the API server, unless its key's name is in noop.
type budgeted struct {
	b     *budget.Budget
	clock *testingclock.FakeClock
	reg   *prometheus.Registry
	c     *controller.Controller[reconcile.Request]

	mu    sync.Mutex
	order []string
}

func newBudgeted(t *testing.T, queued []reconcile.Request, noop ...string) *budgeted {
	t.Helper()
	bd := &budgeted{clock: testingclock.NewFakeClock(time.Now()), reg: prometheus.NewRegistry()}
	var err error
	if bd.b, err = budget.New(budget.Options{QPS: 1, Burst: 1, Clock: bd.clock, Registerer: bd.reg}); err != nil {
		t.Fatal(err)
	}
	if err := bd.b.Wait(t.Context(), budget.LaneReconcile, "other"); err != nil {
		t.Fatal(err)
	}
	cfg := env.Config()
	cfg.Wrap(bd.b.Transport)
	cs := kubernetes.NewForConfigOrDie(cfg)
	r := reconcile.Func[reconcile.Request](func(ctx context.Context, key reconcile.Request) (reconcile.Result, error) {
		bd.mu.Lock()
		bd.order = append(bd.order, key.Name)
		bd.mu.Unlock()
		for _, n := range noop {
			if key.Name == n {
				return reconcile.Done(), nil // served from a cache: no request
			}
		}
		_, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return reconcile.Done(), err
	})
	bd.c, err = controller.New("hammer", r, controller.Options[reconcile.Request]{
		MaxConcurrentReconciles: 1, SpareWorkers: -1, DrainTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := bd.c.Watch(&keys{keys: queued}); err != nil {
		t.Fatal(err)
	}
	return bd
}

// start starts the controller with the budget in its context, as the
// manager does, and returns the function that stops it and returns
// Start's error.
func (bd *budgeted) start(t *testing.T) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(budget.NewContext(context.Background(), bd.b))
	done := make(chan error, 1)
	go func() { done <- bd.c.Start(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				err = errors.New("the controller did not stop within a minute")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func (bd *budgeted) reconciled() []string {
	bd.mu.Lock()
	defer bd.mu.Unlock()
	return append([]string(nil), bd.order...)
}

// With the API budget limited and spent, a worker waits for a token before
// it takes a key, holding none: a key of higher priority queued while it
// waits is the next one reconciled, not the one that was first when the
// wait began. A reconcile that sends no request gives its token back, and
// the next reconcile's first request goes on the token its worker waited
// for: four reconciles, three requests, three tokens.
func TestWorkersWaitForTheBudgetBeforeTakingKeys(t *testing.T) {
	bd := newBudgeted(t, []reconcile.Request{req("low-1"), req("low-2"), req("low-3")}, "high")
	bd.start(t)
	eventually(t, "a worker to wait for the budget", bd.clock.HasWaiters)
	bd.c.Queue().AddWithOpts(queue.AddOpts{Priority: 10}, req("high"))
	steps := 0
	eventually(t, "four reconciles", func() bool {
		// A second's token, only while something waits for one.
		if bd.clock.HasWaiters() {
			bd.clock.Step(time.Second)
			steps++
		}
		return len(bd.reconciled()) == 4
	})
	if diff := cmp.Diff([]string{"high", "low-1", "low-2", "low-3"}, bd.reconciled()); diff != "" {
		t.Errorf("reconciles (-want +got):\n%s", diff)
	}
	if steps != 3 {
		t.Errorf("%d tokens were waited for, want 3: one each for the three reconciles that sent a request", steps)
	}
	eventually(t, "the last request", func() bool { return tokens(t, bd.reg, "hammer") == 3 })
}

// A worker waiting for a token when the controller stops ends at once,
// taking neither a key nor the token: the next token is free.
func TestWorkerWaitingForTheBudgetStopsWithTheController(t *testing.T) {
	bd := newBudgeted(t, []reconcile.Request{req("low-1")})
	stop := bd.start(t)
	eventually(t, "a worker to wait for the budget", bd.clock.HasWaiters)
	if err := stop(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if got := bd.reconciled(); len(got) != 0 {
		t.Errorf("reconciled %v: a worker took a key before the budget let it", got)
	}
	bd.clock.Step(time.Second)
	now, cancel := context.WithCancel(t.Context())
	cancel() // a request that may not wait: it goes only on a free token
	if err := bd.b.Wait(now, budget.LaneReconcile, "other"); err != nil {
		t.Errorf("the token after the stop was not free: %v", err)
	}
}

// tokens returns how many of controller's requests the budget let through.
func tokens(t *testing.T, reg *prometheus.Registry, controller string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "opkit_api_budget_tokens_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
