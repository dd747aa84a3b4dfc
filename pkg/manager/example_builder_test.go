package manager_test

import (
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// A controller of Deployments that watches the Deployment itself (skipping
// status-only updates), the ReplicaSets it controls, and the ConfigMaps its
// pods mount, which reach it through a map function of your own.
func ExampleNewController() {
	var mgr *manager.Manager // from manager.New
	var r reconcile.Reconciler[reconcile.Request]
	// mountedBy maps a ConfigMap to the Deployments that mount it; it runs
	// on the informer's goroutine, so it reads only from caches.
	mountedBy := func(cm *corev1.ConfigMap) []reconcile.Request {
		return []reconcile.Request{{Namespace: cm.Namespace, Name: cm.Labels["app"]}}
	}
	_, err := manager.NewController(mgr, "deployments", r,
		manager.For[*appsv1.Deployment](source.GenerationChanged[*appsv1.Deployment]()),
		manager.Owns[*appsv1.ReplicaSet](),
		manager.Watches(source.EnqueueMapped(mountedBy)),
		manager.WithOptions(controller.Options[reconcile.Request]{MaxConcurrentReconciles: 4}),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
