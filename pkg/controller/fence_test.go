package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/opkit-dev/opkit/internal/fence"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// A leader-only controller (its context carries the manager's leadership
// fence) starts no reconcile while the fence is closed, and resumes at the
// renewal; a reconcile whose write the fence refused is retried then,
// without backoff.
func TestFencedLeaderStartsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := fence.New("ns/lease", time.Second)
		f.Renewed(time.Now())
		r := &recording{start: time.Now(), do: func(_ context.Context, key reconcile.Request, n int) (reconcile.Result, error) {
			switch {
			case key.Name == "refused" && n <= 2:
				// Its write meets the fence after the renewal lapsed.
				time.Sleep(2 * time.Second)
				return reconcile.Done(), fmt.Errorf("patch: %w", fence.ErrFenced)
			case key.Name == "again" && n <= 2:
				return reconcile.RequeueAfter(3 * time.Second), nil
			}
			return reconcile.Done(), nil
		}}
		c, err := controller.New("fenced", r, controller.Options[reconcile.Request]{ReadYourWritesTimeout: -1, MaxConcurrentReconciles: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(&keys{keys: []reconcile.Request{req("refused"), req("again")}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(fence.NewContext(t.Context(), f))
		done := make(chan error)
		go func() { done <- c.Start(ctx) }()
		// The fence closes at 1s; "again" is due at 3s and "refused" is
		// back at 2s: neither starts before the renewal at 10s.
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := len(r.times()); got != 2 {
			t.Errorf("%d reconciles started by 10s, want the 2 before the fence closed", got)
		}
		f.Renewed(time.Now())
		time.Sleep(time.Millisecond)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		got := map[string][]time.Duration{}
		for _, c := range r.calls {
			got[c.key.Name] = append(got[c.key.Name], c.at)
		}
		want := map[string][]time.Duration{"refused": {0, 10 * time.Second}, "again": {0, 10 * time.Second}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("reconcile starts by key (-want +got):\n%s", diff)
		}
	})
}

// A controller whose lease is lost holds its keys at the fence without
// spinning (synctest.Wait would never return), and reconciles them once
// the lease is acquired again.
func TestFenceLostHoldsReconcilesUntilAcquired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := fence.New("ns/lease", time.Second)
		f.Renewed(time.Now())
		f.Lost()
		r := &recording{start: time.Now(), do: func(context.Context, reconcile.Request, int) (reconcile.Result, error) {
			return reconcile.Done(), nil
		}}
		c, err := controller.New("lost", r, controller.Options[reconcile.Request]{ReadYourWritesTimeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(&keys{keys: []reconcile.Request{req("a"), req("b")}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(fence.NewContext(t.Context(), f))
		done := make(chan error)
		go func() { done <- c.Start(ctx) }()
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := len(r.times()); n != 0 {
			t.Errorf("%d reconciles while the lease was lost", n)
		}
		f.Renewed(time.Now())
		time.Sleep(time.Millisecond)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]time.Duration{time.Minute, time.Minute}, r.times()); diff != "" {
			t.Errorf("reconcile starts (-want +got):\n%s", diff)
		}
	})
}

// losesLease is a Gate that admits every key and, the first time, loses
// the lease as it does: the elector's loss landing between a worker's
// wait at the fence and its reconcile.
type losesLease struct {
	f    *fence.Fence
	once sync.Once
}

func (g *losesLease) Admit(reconcile.Request, int) (controller.Verdict, func(bool)) {
	g.once.Do(g.f.Lost)
	return controller.Admit, func(bool) {}
}

// A fence that closes after a worker waited at it, before the reconcile
// starts, still holds the key: the reconcile starts once the lease is
// acquired again, and its span starts then, at the reading the fence was
// checked at.
func TestFenceClosingBeforeTheReconcileHoldsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := fence.New("ns/lease", time.Minute)
		f.Renewed(time.Now())
		r := &recording{start: time.Now(), do: func(context.Context, reconcile.Request, int) (reconcile.Result, error) {
			return reconcile.Done(), nil
		}}
		exp := tracetest.NewInMemoryExporter()
		c, err := controller.New("closing", r, controller.Options[reconcile.Request]{
			ReadYourWritesTimeout: -1,
			Gate:                  &losesLease{f: f},
			TracerProvider:        sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(&keys{keys: []reconcile.Request{req("a")}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(fence.NewContext(t.Context(), f))
		done := make(chan error)
		go func() { done <- c.Start(ctx) }()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := len(r.times()); n != 0 {
			t.Errorf("%d reconciles started after the lease was lost", n)
		}
		f.Renewed(time.Now())
		time.Sleep(time.Millisecond)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]time.Duration{5 * time.Second}, r.times()); diff != "" {
			t.Errorf("reconcile starts (-want +got):\n%s", diff)
		}
		spans := exp.GetSpans()
		if len(spans) != 1 {
			t.Fatalf("%d spans, want 1", len(spans))
		}
		if got := spans[0].StartTime.Sub(r.start); got != 5*time.Second {
			t.Errorf("the reconcile's span starts at %v, want 5s, when the fence let it start", got)
		}
	})
}
