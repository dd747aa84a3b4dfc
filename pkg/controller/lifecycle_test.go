package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

var noop = reconcile.Func[reconcile.Request](func(context.Context, reconcile.Request) (reconcile.Result, error) {
	return reconcile.Done(), nil
})

func TestNewRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		ctrl    string
		r       reconcile.Reconciler[reconcile.Request]
		opts    controller.Options[reconcile.Request]
		mention []string
	}{
		{name: "empty name", ctrl: "", r: noop, mention: []string{`name ""`}},
		{name: "name with a space", ctrl: "my controller", r: noop, mention: []string{`"my controller"`}},
		{name: "nil reconciler", ctrl: "c", mention: []string{"Reconciler is nil"}},
		{name: "negative workers", ctrl: "c", r: noop, opts: controller.Options[reconcile.Request]{MaxConcurrentReconciles: -1},
			mention: []string{"MaxConcurrentReconciles is -1"}},
		{name: "negative durations", ctrl: "c", r: noop,
			opts:    controller.Options[reconcile.Request]{ReconcileTimeout: -1, CacheSyncTimeout: -time.Second, DrainTimeout: -time.Minute},
			mention: []string{"ReconcileTimeout is -1ns", "CacheSyncTimeout is -1s", "DrainTimeout is -1m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := controller.New(tt.ctrl, tt.r, tt.opts)
			if err == nil {
				t.Fatal("New succeeded")
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	c, err := controller.New("c", noop, controller.Options[reconcile.Request]{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); !errors.Is(err, controller.ErrNoSources) {
		t.Errorf("Start without sources = %v, want ErrNoSources", err)
	}

	synctest.Test(t, func(t *testing.T) {
		c, err := controller.New("c", noop, controller.Options[reconcile.Request]{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(nil); err == nil {
			t.Error("Watch(nil) succeeded")
		}
		if err := c.Watch(&keys{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- c.Start(ctx) }()
		synctest.Wait()
		if err := c.Start(ctx); err == nil || !strings.Contains(err.Error(), "Start called twice") {
			t.Errorf("second Start = %v, want an error saying so", err)
		}
		if err := c.Watch(&keys{}); err == nil || !strings.Contains(err.Error(), "Watch after Start") {
			t.Errorf("Watch after Start = %v, want an error saying so", err)
		}
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("first Start = %v after a clean stop", err)
		}
	})
}

// A source that does not sync in time fails Start with an error that names
// it, and nothing is reconciled.
func TestCacheSyncTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reconciled := false
		c, err := controller.New("c", reconcile.Func[reconcile.Request](func(context.Context, reconcile.Request) (reconcile.Result, error) {
			reconciled = true
			return reconcile.Done(), nil
		}), controller.Options[reconcile.Request]{CacheSyncTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(&keys{keys: []reconcile.Request{req("a")}, synced: make(chan struct{})}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = c.Start(t.Context())
		if !errors.Is(err, cache.ErrNotSynced) || !strings.Contains(err.Error(), "keys source not synced") {
			t.Errorf("Start = %v, want ErrNotSynced naming the source", err)
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("Start gave up after %v, want 10s", d)
		}
		if reconciled {
			t.Error("reconciled before the sources synced")
		}
	})
}

// A stop lets the reconcile in flight finish, with its context live.
func TestDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// a and b are of one tenant, so the spare never takes either (see
		// TestOneTenantGetsNoSpare); the lock keeps the record sound if
		// that ever changes, which the race detector would otherwise
		// report as this test's failure.
		var (
			mu     sync.Mutex
			ctxErr error
		)
		c, err := controller.New("c", reconcile.Func[reconcile.Request](func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			time.Sleep(5 * time.Second)
			mu.Lock()
			defer mu.Unlock()
			if ctxErr == nil {
				ctxErr = ctx.Err()
			}
			return reconcile.Done(), nil
		}), controller.Options[reconcile.Request]{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(&keys{keys: []reconcile.Request{req("a"), req("b")}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- c.Start(ctx) }()
		time.Sleep(time.Second)
		cancel()
		stopped := time.Now()
		if err := <-errc; err != nil {
			t.Errorf("Start = %v, want nil after a drain within the timeout", err)
		}
		if d := time.Since(stopped); d != 4*time.Second {
			t.Errorf("Start returned %v after the stop, want 4s (the rest of the reconcile in flight)", d)
		}
		mu.Lock()
		defer mu.Unlock()
		if ctxErr != nil {
			t.Errorf("the reconcile's context ended during the drain: %v", ctxErr)
		}
	})
}

// A reconcile that outlasts the drain timeout has its context canceled with
// ErrShutdown, and Start reports the timeout.
func TestDrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cause := make(chan error, 1)
		c, err := controller.New("c", reconcile.Func[reconcile.Request](func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return reconcile.Done(), nil
		}), controller.Options[reconcile.Request]{DrainTimeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(&keys{keys: []reconcile.Request{req("a")}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- c.Start(ctx) }()
		synctest.Wait()
		cancel()
		err = <-errc
		if err == nil || !strings.Contains(err.Error(), "DrainTimeout") || !strings.Contains(err.Error(), `"a"`) && !strings.Contains(err.Error(), "ns/a") {
			t.Errorf("Start = %v, want a drain timeout naming the key in flight", err)
		}
		if got := <-cause; !errors.Is(got, controller.ErrShutdown) {
			t.Errorf("the reconcile's context ended with %v, want ErrShutdown", got)
		}
	})
}

// A stop whose cause wraps ErrAbort cancels the reconcile in flight at once.
func TestAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cause := make(chan error, 1)
		c, err := controller.New("c", reconcile.Func[reconcile.Request](func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return reconcile.Done(), nil
		}), controller.Options[reconcile.Request]{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(&keys{keys: []reconcile.Request{req("a")}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancelCause(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- c.Start(ctx) }()
		synctest.Wait()
		stopped := time.Now()
		cancel(fmt.Errorf("%w: lease lost", controller.ErrAbort))
		if err := <-errc; err != nil {
			t.Errorf("Start = %v after an abort", err)
		}
		if d := time.Since(stopped); d != 0 {
			t.Errorf("abort took %v, want no wait", d)
		}
		if got := <-cause; !errors.Is(got, controller.ErrAbort) {
			t.Errorf("the reconcile's context ended with %v, want ErrAbort", got)
		}
	})
}
