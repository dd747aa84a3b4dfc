//go:build !race

package controller_test

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/internal/budget"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// A reconcile's own overhead, in a controller as a manager configures one
// by default (metrics, event lag and read-your-writes on, tracing off),
// stays within a fixed number of allocations: its context, its logger's
// key/values and its ID. Each was once allocated twice or more per
// reconcile, one of them even with nothing to log. (The race detector
// allocates, hence the build tag.)
//
// The manager's API budget allocates nothing per reconcile: unlimited
// (its default), nor limited with tokens to spare, where each worker
// waits for a pre-paid token before each key.
func TestReconcileAllocs(t *testing.T) {
	// The reconcile's context, which holds its ID, its logger's
	// key/values and what they point to, and the logger boxed for
	// logr.FromContext: 2. A key added and handed out again costs the
	// queue nothing once its maps have grown.
	const want = 2
	for _, bc := range budgetCases(t) {
		t.Run(bc.name, func(t *testing.T) {
			reconcileOne := startDefault(t, bc.budget)
			allocs := testing.AllocsPerRun(1000, reconcileOne)
			if allocs > want {
				t.Errorf("%v allocations per reconcile, want at most %d", allocs, want)
			}
		})
	}
}

// BenchmarkReconcile is a reconcile's overhead (queue included) in a
// controller as TestReconcileAllocs configures it, for profiles:
// go test -run '^$' -bench Reconcile -cpuprofile ./pkg/controller.
func BenchmarkReconcile(b *testing.B) {
	for _, bc := range budgetCases(b) {
		b.Run(bc.name, func(b *testing.B) {
			reconcileOne := startDefault(b, bc.budget)
			b.ReportAllocs()
			for b.Loop() {
				reconcileOne()
			}
		})
	}
}

type budgetCase struct {
	name   string
	budget *budget.Budget
}

// budgetCases are the API budgets a controller may run with: none; the
// manager's default, no rate until the server pushes back; and a rate
// that never binds, so that each worker waits for a token before each key
// (and, its reconcile sending nothing, gives it back), but never long.
func budgetCases(t testing.TB) []budgetCase {
	unlimited, err := budget.New(budget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	limited, err := budget.New(budget.Options{QPS: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	return []budgetCase{{"no-budget", nil}, {"unlimited-budget", unlimited}, {"limited-budget", limited}}
}

// startDefault starts a controller as a manager configures one by default,
// with b its API budget if not nil, and returns a function that has it
// reconcile one key and waits for the reconciler's call.
func startDefault(t testing.TB, b *budget.Budget) func() {
	reconciled, stopped := make(chan struct{}), make(chan struct{})
	r := reconcile.Func[reconcile.Request](func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
		select {
		case reconciled <- struct{}{}:
		case <-stopped:
		}
		return reconcile.Done(), nil
	})
	c, err := controller.New("allocs", r, controller.Options[reconcile.Request]{
		Registerer: prometheus.NewRegistry(),
		Logger:     logr.New(nopSink{}), // no sink's own allocations

	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(&keys{}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if b != nil {
		ctx = budget.NewContext(ctx, b)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		close(stopped)
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	key := req("a")
	return func() {
		c.Queue().Add(key)
		<-reconciled
	}
}

// nopSink is a logger that keeps nothing and formats nothing. (logr.Discard
// would be replaced by the default logger.)
type nopSink struct{}

func (nopSink) Init(logr.RuntimeInfo)            {}
func (nopSink) Enabled(int) bool                 { return false }
func (nopSink) Info(int, string, ...any)         {}
func (nopSink) Error(error, string, ...any)      {}
func (s nopSink) WithValues(...any) logr.LogSink { return s }
func (s nopSink) WithName(string) logr.LogSink   { return s }
