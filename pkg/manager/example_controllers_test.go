package manager_test

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// A controller added while the manager runs, when the operator learns it
// needs one (a custom resource names a kind to act on, say), and removed
// when it no longer does. NewController starts it at once (on the leader);
// RemoveController finishes what it has queued, stops it, releases the
// informers it alone held and deletes its metric series.
func ExampleManager_RemoveController() {
	var mgr *manager.Manager // from manager.New, started
	r := reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		return reconcile.Done(), nil
	})
	if _, err := manager.NewController(mgr, "configmaps", r, manager.For[*corev1.ConfigMap](nil)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}

	// Later, when the controller is no longer wanted:
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := mgr.RemoveController(ctx, "configmaps", manager.Drain); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}
