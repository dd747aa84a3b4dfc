package cache_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// A reconciler of ReplicaSets lists the pods each controls, by the
// built-in index rather than one of owner names: the pods of a same-named
// ReplicaSet in another namespace are never among them. (The first
// ControlledBy adds the index; manager.Owns adds it before Start.)
func ExampleLister_ControlledBy() {
	var cfg *rest.Config // from the manager, clientcmd or rest.InClusterConfig
	c, err := cache.New(cfg, cache.Options{})
	if err != nil {
		panic(err)
	}
	pods, err := cache.Register[*corev1.Pod](c, cache.TypeOptions{})
	if err != nil {
		panic(err)
	}
	replicaSets, err := cache.Register[*appsv1.ReplicaSet](c, cache.TypeOptions{})
	if err != nil {
		panic(err)
	}
	// ... Start and WaitForSync, then in a reconcile of ReplicaSet shop/web:
	rs, err := replicaSets.Get("shop", "web")
	if err != nil {
		panic(err)
	}
	mine, err := pods.ControlledBy(rs) // cached objects: do not modify
	if err != nil {
		panic(err)
	}
	fmt.Println(len(mine))
}
