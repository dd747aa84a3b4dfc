package source_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// Periodic polls at Start and then once per interval of its clock.
func TestPeriodic(t *testing.T) {
	verifyNoLeaks(t)
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	q := newQueue[reconcile.Request](t)
	polls := make(chan int)
	n := 0
	src := source.NewPeriodic(time.Minute, func(ctx context.Context) []reconcile.Request {
		n++
		select {
		case polls <- n:
		case <-ctx.Done():
		}
		return []reconcile.Request{req("ext", "poll")}
	}, source.PeriodicOptions{Clock: clk, Priority: queue.LowPriority})
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= 3; want++ {
		if got := <-polls; got != want {
			t.Fatalf("poll %d, want %d", got, want)
		}
		k, p, _ := q.Get()
		q.Done(k)
		if diff := cmp.Diff(low("ext", "poll"), item{k, p}); diff != "" {
			t.Errorf("poll %d queued (-want +got):\n%s", want, diff)
		}
		// Half an interval fires nothing; the whole one fires one poll,
		// which the next turn of the loop receives.
		clk.Step(30 * time.Second)
		clk.Step(30 * time.Second)
	}
}

func TestPeriodicStartErrors(t *testing.T) {
	q := newQueue[reconcile.Request](t)
	keys := func(context.Context) []reconcile.Request { return nil }
	if err := source.NewPeriodic(0, keys, source.PeriodicOptions{}).Start(t.Context(), q); err == nil {
		t.Error("Start with a zero interval succeeded")
	}
	if err := source.NewPeriodic[reconcile.Request](time.Second, nil, source.PeriodicOptions{}).Start(t.Context(), q); err == nil {
		t.Error("Start with a nil keys function succeeded")
	}
}
