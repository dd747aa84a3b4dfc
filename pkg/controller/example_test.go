package controller_test

import (
	"context"
	"fmt"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// tick is a source that queues one key at Start.
type tick struct{ key reconcile.Request }

func (s tick) Start(_ context.Context, q *queue.Queue[reconcile.Request]) error {
	q.Add(s.key)
	return nil
}

// A controller reconciles each key its sources queue; an error is retried
// with backoff, and a stop lets the reconcile in flight finish.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	attempts := 0
	r := reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		attempts++
		fmt.Printf("reconcile %v, attempt %d\n", req, attempts)
		if attempts < 3 {
			return reconcile.Done(), fmt.Errorf("source not ready")
		}
		stop()
		return reconcile.Done(), nil
	})
	c, err := controller.New("mirror", r, controller.Options[reconcile.Request]{DrainTimeout: time.Second})
	if err != nil {
		panic(err)
	}
	if err := c.Watch(tick{reconcile.Request{Namespace: "platform", Name: "ca-bundle"}}); err != nil {
		panic(err)
	}
	fmt.Println("Start returned:", c.Start(ctx))
	// Output:
	// reconcile platform/ca-bundle, attempt 1
	// reconcile platform/ca-bundle, attempt 2
	// reconcile platform/ca-bundle, attempt 3
	// Start returned: <nil>
}

// A reconciler that asks to be requeued after an hour is tested without
// waiting an hour: the controller's queue tells time by Options.Clock, and
// the test steps a fake clock past the requeue.
//
// With one worker, reconciling a second key shows that the first key's
// requeue is in the queue; only then is the clock stepped.
func Example_requeueAfter() {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	fake := clocktesting.NewFakeClock(start)
	reconciled := make(chan reconcile.Request)
	r := reconcile.Func[reconcile.Request](func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		reconciled <- req
		if req.Name == "ca-bundle" {
			return reconcile.RequeueAfter(time.Hour), nil // say, to check a certificate hourly
		}
		return reconcile.Done(), nil
	})
	c, err := controller.New("mirror", r, controller.Options[reconcile.Request]{Clock: fake, DrainTimeout: time.Second})
	if err != nil {
		panic(err)
	}
	key := reconcile.Request{Namespace: "platform", Name: "ca-bundle"}
	if err := c.Watch(tick{key}); err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Start(ctx) }()

	fmt.Println("reconciled", <-reconciled, "after", fake.Since(start))
	c.Queue().Add(reconcile.Request{Namespace: "platform", Name: "other"})
	fmt.Println("reconciled", <-reconciled)

	fake.Step(time.Hour)
	fmt.Println("reconciled", <-reconciled, "after", fake.Since(start))
	stop()
	fmt.Println("Start returned:", <-done)
	// Output:
	// reconciled platform/ca-bundle after 0s
	// reconciled platform/other
	// reconciled platform/ca-bundle after 1h0m0s
	// Start returned: <nil>
}
