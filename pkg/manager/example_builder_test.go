package manager_test

import (
	"context"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// deploymentReconciler reads Deployments, the ReplicaSets they control and
// the ConfigMaps their pods mount; NewController sets its Listers.
type deploymentReconciler struct {
	deployments *cache.Lister[*appsv1.Deployment]
	replicaSets *cache.Lister[*appsv1.ReplicaSet]
	configMaps  *cache.Lister[*corev1.ConfigMap]
	client      client.Client
}

func (r *deploymentReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return reconcile.Done(), nil
}

// mountedBy maps a ConfigMap to the Deployments that mount it; it runs on
// the informer's goroutine, so it reads only from caches.
func (r *deploymentReconciler) mountedBy(cm *corev1.ConfigMap) []reconcile.Request {
	return []reconcile.Request{{Namespace: cm.Namespace, Name: cm.Labels["app"]}}
}

// A controller of Deployments that watches the Deployment itself (skipping
// status-only updates), the ReplicaSets it controls, and the ConfigMaps its
// pods mount, which reach it through a map function of your own. Each type
// is named once, in the reconciler's fields: NewController registers the
// types, sets the Listers and infers each watch's type from them.
func ExampleNewController() {
	var mgr *manager.Manager // from manager.New
	r := &deploymentReconciler{client: mgr.Writer("deployments")}
	_, err := manager.NewController(mgr, "deployments", r,
		manager.For(&r.deployments, source.GenerationChanged),
		manager.Owns(&r.replicaSets),
		manager.Watches(&r.configMaps, r.mountedBy),
		manager.WithOptions(controller.Options[reconcile.Request]{MaxConcurrentReconciles: 4}),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
