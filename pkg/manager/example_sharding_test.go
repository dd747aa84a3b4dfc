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
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// A sharded operator: run three replicas of this main and each reconciles,
// and caches, about a third of the ConfigMaps. Each replica's key goes to
// the replica holding the slot of the ConfigMap's namespace (ShardBy), so
// one namespace's ConfigMaps stay together; the default, sharding.ByUID,
// spreads them evenly instead. The same Group and Slots on every replica;
// each replica's Identity defaults to its host name and random digits.
//
// The reconciler reads the ConfigMaps through the Lister NewController
// uses: cache.Register with the same TypeOptions returns it. The Secrets a
// ConfigMap names are watched sharded by namespace too (ShardWatch), which
// is correct because the mapping stays within a namespace: the replica
// holding a ConfigMap's slot holds its Secrets' too.
func ExampleShardingOptions() {
	cfg, err := manager.Config("")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mgr, err := manager.New(cfg, manager.Options{
		Sharding: manager.ShardingOptions{Enabled: true, Group: "example-operator"},
		Health:   manager.HealthOptions{BindAddress: ":8081"}, // /readyz: holds its slots, cache synced
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// NewController sets configMaps to its registration of ConfigMaps,
	// sharded as ShardBy says: this replica's slots of them.
	var configMaps *cache.Lister[*corev1.ConfigMap]
	r := reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		cm, err := configMaps.Get(req.Namespace, req.Name)
		if err != nil {
			return reconcile.Done(), client.IgnoreNotFound(err)
		}
		// Write with cm's resourceVersion as a precondition (Update does):
		// fencing bounds overlap by timing assumptions, preconditions catch
		// what slips through.
		_ = cm
		return reconcile.Done(), nil
	})
	if _, err := manager.NewController(mgr, "configmaps", r,
		manager.For(&configMaps), manager.ShardBy(sharding.ByNamespace),
		manager.ShardWatch(sharding.ByNamespace, manager.Watches(nil, func(s *corev1.Secret) []reconcile.Request {
			return []reconcile.Request{{Namespace: s.Namespace, Name: s.Labels["example.opkit.dev/config-map"]}}
		}))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := mgr.Start(manager.SignalContext()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Sharding's options are checked by New, each error naming the field.
func ExampleShardingOptions_invalid() {
	_, err := manager.New(&rest.Config{Host: "https://127.0.0.1:6443"}, manager.Options{
		Sharding: manager.ShardingOptions{Enabled: true, Namespace: "operators", Slots: 48},
	})
	fmt.Println(err)
	// Output:
	// manager: invalid options: Options.Sharding.Group is empty: name the replicas' group, such as "my-operator", the same on every replica
	// Options.Sharding.Slots: invalid slots: count 48: use a power of two from 1 to 1024 (1, 2, 4, ..., 1024)
}
