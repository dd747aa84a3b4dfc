package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// With every worker blocked in a reconcile of a flooding tenant, a quiet
// tenant's key is reconciled at once, by a spare worker, while they are
// still blocked.
func TestQuietTenantStartsDuringFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		quiet := make(chan reconcile.Request, 1)
		c, err := controller.New("c", reconcile.Func[reconcile.Request](func(_ context.Context, key reconcile.Request) (reconcile.Result, error) {
			if key.Namespace == "flood" {
				<-release
			} else {
				quiet <- key
			}
			return reconcile.Done(), nil
		}), controller.Options[reconcile.Request]{MaxConcurrentReconciles: 2})
		if err != nil {
			t.Fatal(err)
		}
		var flood []reconcile.Request
		for i := range 20 {
			flood = append(flood, reconcile.Request{Namespace: "flood", Name: fmt.Sprint(i)})
		}
		if err := c.Watch(&keys{keys: flood}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- c.Start(ctx) }()
		synctest.Wait() // every worker that can take a flood key is blocked in one
		c.Queue().Add(reconcile.Request{Namespace: "quiet", Name: "x"})
		synctest.Wait()
		select {
		case k := <-quiet:
			t.Logf("%v reconciled while the flood's reconciles are blocked", k)
		default:
			t.Error("a quiet tenant's key was not reconciled while every worker was blocked in a flooding tenant's reconcile")
		}
		close(release)
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Start = %v", err)
		}
	})
}

// concurrency runs a controller over keys of the given tenants (namespaces),
// n keys each, whose reconciles take a second, and returns the most
// reconciles that ran at once, overall and of one tenant, and the
// controller's max_concurrent_reconciles gauge.
func concurrency(t *testing.T, opts controller.Options[reconcile.Request], tenants, n int) (most, mostOfOne int, gauge float64) {
	var mu sync.Mutex
	running, total := map[string]int{}, 0
	var ks []reconcile.Request
	for i := range tenants {
		for j := range n {
			ks = append(ks, reconcile.Request{Namespace: fmt.Sprint("t", i), Name: fmt.Sprint(j)})
		}
	}
	_, reg := run(t, time.Hour, opts, &keys{keys: ks},
		func(_ context.Context, key reconcile.Request, _ int) (reconcile.Result, error) {
			mu.Lock()
			running[key.Namespace]++
			total++
			most, mostOfOne = max(most, total), max(mostOfOne, running[key.Namespace])
			mu.Unlock()
			time.Sleep(time.Second)
			mu.Lock()
			running[key.Namespace]--
			total--
			mu.Unlock()
			return reconcile.Done(), nil
		})
	return most, mostOfOne, counter(t, reg, imetrics.MaxConcurrentReconciles, "controller", "test")
}

// Spare workers add at most SpareWorkers reconciles to MaxConcurrentReconciles,
// at most one per tenant, and max_concurrent_reconciles counts them.
func TestSpareWorkersBound(t *testing.T) {
	tests := []struct {
		name               string
		opts               controller.Options[reconcile.Request]
		most, gauge        int
		tenants, mostOfOne int
	}{
		{name: "default: as many spares as workers", opts: controller.Options[reconcile.Request]{MaxConcurrentReconciles: 3},
			tenants: 10, most: 6, mostOfOne: 4, gauge: 6},
		{name: "two spares", opts: controller.Options[reconcile.Request]{MaxConcurrentReconciles: 3, SpareWorkers: 2},
			tenants: 10, most: 5, mostOfOne: 4, gauge: 5},
		{name: "disabled", opts: controller.Options[reconcile.Request]{MaxConcurrentReconciles: 3, SpareWorkers: -1},
			tenants: 10, most: 3, mostOfOne: 3, gauge: 3},
		{name: "one tenant: no spare", opts: controller.Options[reconcile.Request]{MaxConcurrentReconciles: 3},
			tenants: 1, most: 3, mostOfOne: 3, gauge: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				most, mostOfOne, gauge := concurrency(t, tt.opts, tt.tenants, 10)
				if most > tt.most || mostOfOne > tt.mostOfOne {
					t.Errorf("at most %d reconciles at once, %d of one tenant; want at most %d and %d", most, mostOfOne, tt.most, tt.mostOfOne)
				}
				if most != tt.most {
					t.Errorf("at most %d reconciles at once, want %d", most, tt.most)
				}
				if gauge != float64(tt.gauge) {
					t.Errorf("%s = %v, want %d", imetrics.MaxConcurrentReconciles, gauge, tt.gauge)
				}
			})
		})
	}
}

// While only one tenant has work, a spare never takes its keys: a spare
// serves only while every regular worker is busy, and then only a tenant
// with nothing in flight. So a controller with the default one worker
// reconciles one key at a time, in the queue's order, as it did before
// spare workers; a spare that took a key beside an idle worker ran two
// keys of one tenant at once.
func TestOneTenantGetsNoSpare(t *testing.T) {
	for range 5 {
		synctest.Test(t, func(t *testing.T) {
			most, _, gauge := concurrency(t, controller.Options[reconcile.Request]{}, 1, 20)
			if most != 1 {
				t.Fatalf("%d reconciles of one tenant at once with one worker and its spare, want 1", most)
			}
			if gauge != 2 {
				t.Errorf("%s = %v, want 2 (a worker and its spare)", imetrics.MaxConcurrentReconciles, gauge)
			}
		})
	}
}

// A controller whose keys have no tenant runs no spare workers: every key
// would be of one tenant.
func TestNoSpareWorkersWithoutTenant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		running, most := 0, 0
		c, err := controller.New("c", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(time.Second)
			mu.Lock()
			running--
			mu.Unlock()
			return reconcile.Done(), nil
		}), controller.Options[string]{MaxConcurrentReconciles: 2})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			c.Queue().Add(fmt.Sprint(i))
		}
		if err := c.Watch(&stringKeys{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- c.Start(ctx) }()
		time.Sleep(time.Hour)
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Start = %v", err)
		}
		if most != 2 {
			t.Errorf("at most %d reconciles at once, want 2 (MaxConcurrentReconciles, no spares)", most)
		}
	})
}

// A stop waits for the spare workers' reconciles too.
func TestDrainWaitsForSpares(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		quietDone := false
		c, err := controller.New("c", reconcile.Func[reconcile.Request](func(ctx context.Context, key reconcile.Request) (reconcile.Result, error) {
			if key.Namespace == "flood" {
				<-release
				return reconcile.Done(), nil
			}
			time.Sleep(5 * time.Second)
			quietDone = ctx.Err() == nil
			return reconcile.Done(), nil
		}), controller.Options[reconcile.Request]{MaxConcurrentReconciles: 1, SpareWorkers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(&keys{keys: []reconcile.Request{{Namespace: "flood", Name: "0"}, {Namespace: "flood", Name: "1"}}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- c.Start(ctx) }()
		synctest.Wait()
		c.Queue().Add(reconcile.Request{Namespace: "quiet", Name: "x"})
		synctest.Wait() // the spare is in quiet/x's reconcile, the worker in flood's
		close(release)
		time.Sleep(time.Second)
		cancel()
		stopped := time.Now()
		if err := <-errc; err != nil {
			t.Errorf("Start = %v, want nil after a drain within the timeout", err)
		}
		if d := time.Since(stopped); d != 4*time.Second {
			t.Errorf("Start returned %v after the stop, want 4s (the rest of the spare's reconcile)", d)
		}
		if !quietDone {
			t.Error("the spare's reconcile did not finish with its context live")
		}
	})
}

// Spare workers need a Tenant: without one New says what to do.
func TestSpareWorkersWithoutTenantRejected(t *testing.T) {
	noopString := reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) { return reconcile.Done(), nil })
	_, err := controller.New("c", noopString, controller.Options[string]{SpareWorkers: 2})
	if err == nil || !strings.Contains(err.Error(), "SpareWorkers is 2 but the controller has no Tenant") || !strings.Contains(err.Error(), "set Options.Tenant") {
		t.Errorf("New with spare workers and no Tenant = %v, want an error saying to set Options.Tenant", err)
	}
	if _, err := controller.New("c", noopString, controller.Options[string]{SpareWorkers: 2, Tenant: func(k string) string { return k }}); err != nil {
		t.Errorf("New with spare workers and a Tenant = %v", err)
	}
	if _, err := controller.New("c", noopString, controller.Options[string]{SpareWorkers: -1}); err != nil {
		t.Errorf("New with no spare workers (-1) and no Tenant = %v", err)
	}
}

// stringKeys is a source of no keys for a controller of string keys.
type stringKeys struct{}

func (stringKeys) Start(context.Context, *queue.Queue[string]) error { return nil }

// Groups hold tenants: a TenantGroup without a Tenant is refused.
func TestTenantGroupWithoutTenantRejected(t *testing.T) {
	noopString := reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) { return reconcile.Done(), nil })
	group := func(tenant string) string { return tenant }
	_, err := controller.New("c", noopString, controller.Options[string]{TenantGroup: group})
	if err == nil || !strings.Contains(err.Error(), "TenantGroup is set but the controller has no Tenant") {
		t.Errorf("New with a TenantGroup and no Tenant = %v, want an error saying to set Options.Tenant", err)
	}
	if _, err := controller.New("c", noopString, controller.Options[string]{TenantGroup: group, Tenant: func(k string) string { return k }}); err != nil {
		t.Errorf("New with a TenantGroup and a Tenant = %v", err)
	}
}
