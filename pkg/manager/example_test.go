package manager_test

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// An operator's main: find the cluster, build the manager, add a controller
// and run until SIGTERM.
func Example() {
	cfg, err := manager.Config("")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mgr, err := manager.New(cfg, manager.Options{
		LeaderElection: manager.LeaderElectionOptions{Enabled: true, Name: "example-operator"},
		Health:         manager.HealthOptions{BindAddress: ":8081"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var configMaps *cache.Lister[*corev1.ConfigMap] // NewController registers and sets it
	r := reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		cm, err := configMaps.Get(req.Namespace, req.Name) // the cached object: read, never modify
		if err != nil {
			return reconcile.Done(), client.IgnoreNotFound(err) // deleted: nothing to do
		}
		mgr.Logger().Info("Reconciled", "configMap", req, "keys", len(cm.Data))
		return reconcile.Done(), nil
	})
	if _, err := manager.NewController(mgr, "configmaps", r,
		manager.For(&configMaps, source.LabelsChanged)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := mgr.Start(manager.SignalContext()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Invalid options fail New, naming the field and what to do.
func ExampleNew_invalidOptions() {
	_, err := manager.New(&rest.Config{Host: "https://127.0.0.1:6443"}, manager.Options{
		LeaderElection: manager.LeaderElectionOptions{Enabled: true, Namespace: "operators"},
	})
	fmt.Println(err)
	// Output: manager: invalid options: Options.LeaderElection.Name is empty: name the Lease, such as "my-operator-leader"
}

// A recorder's name becomes every Event's reportingController, which the
// API server requires to be a qualified name: any other fails here rather
// than on every Event.
func ExampleManager_EventRecorder() {
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:6443"}, manager.Options{Metrics: manager.MetricsOptions{BindAddress: "0"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := mgr.EventRecorder("Foo controller"); err != nil {
		fmt.Println("refused: not a qualified name")
	}
	if _, err := mgr.EventRecorder("example.com/mirror"); err == nil {
		fmt.Println("accepted: example.com/mirror")
	}
	// Output:
	// refused: not a qualified name
	// accepted: example.com/mirror
}
