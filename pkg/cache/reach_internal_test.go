package cache

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// Once a list or watch fails to connect, the informers' next lists and
// watches wait, one of them probing every probeInterval, and all go on
// at the first probe that finds the API server back; errors that are the
// API server's answers, or a canceled call's, change nothing.
func TestReachHoldsCallsUntilTheAPIServerAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var probes atomic.Int32
		back := time.Now().Add(3 * time.Second)
		r := &reach{probe: func(context.Context) bool {
			probes.Add(1)
			return !time.Now().Before(back)
		}}
		ctx := t.Context()
		if err := r.wait(ctx); err != nil {
			t.Fatalf("wait before any failure = %v, want nil at once", err)
		}
		r.failed(ctx, errors.New("the server could not find the requested resource"))
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		r.failed(canceled, errRefused)
		if r.up != nil {
			t.Fatal("an answer of the API server, or a canceled call, marked it out of reach")
		}
		r.failed(ctx, errRefused)
		start := time.Now()
		var wg sync.WaitGroup
		var late atomic.Int64
		for range 5 {
			wg.Go(func() {
				if err := r.wait(ctx); err != nil {
					t.Error(err)
				}
				late.Store(int64(time.Since(back)))
			})
		}
		wg.Wait()
		if got := time.Since(start); got < 3*time.Second {
			t.Errorf("waiters went on after %v, before the API server was back", got)
		}
		if d := time.Duration(late.Load()); d > probeInterval {
			t.Errorf("the last waiter went on %v after the API server was back, want within %v", d, probeInterval)
		}
		if n := probes.Load(); n > int32(3*time.Second/probeInterval)+2 {
			t.Errorf("%d probes in 3s: five waiters probed, not one", n)
		}
		if err := r.wait(ctx); err != nil {
			t.Errorf("wait once back = %v, want nil", err)
		}
	})
}

// A waiter that probes and gives up (its informer stopped) hands the
// probing on to another.
func TestReachProberLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		back := time.Now().Add(2 * time.Second)
		r := &reach{probe: func(context.Context) bool { return !time.Now().Before(back) }}
		r.failed(t.Context(), errRefused)
		first, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.wait(first) }()
		synctest.Wait() // the first waiter probes
		second := make(chan error, 1)
		go func() { second <- r.wait(t.Context()) }()
		time.Sleep(time.Second)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("canceled waiter = %v, want context.Canceled", err)
		}
		if err := <-second; err != nil {
			t.Errorf("second waiter = %v, want nil once the API server is back", err)
		}
		if time.Now().Before(back) {
			t.Error("the second waiter went on before the API server was back")
		}
	})
}
