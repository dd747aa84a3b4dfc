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
