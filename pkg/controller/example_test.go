package controller_test

import (
	"context"
	"fmt"
	"time"

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
