package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// A reconciler that waits on something no event announces asks to run again
// later; one given bad input says retrying will not help.
func ExampleFunc() {
	r := reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		switch req.Name {
		case "waiting":
			return reconcile.RequeueAfter(30 * time.Second), nil
		case "bad":
			return reconcile.Done(), reconcile.Terminal(errors.New("spec.source.kind must be ConfigMap or Secret"))
		}
		return reconcile.Done(), nil
	})
	for _, name := range []string{"ready", "waiting", "bad"} {
		res, err := r.Reconcile(context.Background(), reconcile.Request{Namespace: "platform", Name: name})
		fmt.Printf("%s: %v, terminal=%v\n", name, res, errors.Is(err, reconcile.ErrTerminal))
	}
	// Output:
	// ready: done, terminal=false
	// waiting: requeue after 30s, terminal=false
	// bad: done, terminal=true
}

// A reconciler made of parts returns the soonest of their requeues: here a
// certificate renewed hourly, a rollout polled every ten seconds and a
// cleanup that is finished. A part that asks for the backoff wins over
// any delay; only when every part is done is the whole.
func ExampleSoonest() {
	certificate := reconcile.RequeueAfter(time.Hour)
	rollout := reconcile.RequeueAfter(10 * time.Second)
	cleanup := reconcile.Done()
	fmt.Println(reconcile.Soonest(certificate, rollout, cleanup))
	fmt.Println(reconcile.Soonest(certificate, reconcile.RequeueWithBackoff(), rollout))
	fmt.Println(reconcile.Soonest(cleanup, reconcile.Done()))
	// Output:
	// requeue after 10s
	// requeue with backoff
	// done
}
