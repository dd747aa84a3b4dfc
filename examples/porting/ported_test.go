package porting_test

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// fromControllerRuntime runs a controller-runtime reconciler as an opkit
// one while it is being ported: it translates the request, the result and
// controller-runtime's terminal error, which opkit would otherwise retry.
func fromControllerRuntime(r crreconcile.Reconciler) reconcile.Reconciler[reconcile.Request] {
	return reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, crreconcile.Request{NamespacedName: crclient.ObjectKey{Namespace: req.Namespace, Name: req.Name}})
		switch {
		case errors.Is(err, crreconcile.TerminalError(nil)):
			return reconcile.Done(), reconcile.Terminal(err)
		case err != nil:
			return reconcile.Done(), err
		case res.RequeueAfter > 0:
			return reconcile.RequeueAfter(res.RequeueAfter), nil
		case res.Requeue: //lint:ignore SA1019 ported code may still set it
			return reconcile.RequeueWithBackoff(), nil
		}
		return reconcile.Done(), nil
	})
}

// setupPortedWeb runs crWebReconciler, unchanged, on opkit: its reads go
// through mgr.CachedClient(), so they need its kinds registered (For
// registers the Deployments) and its field index under the name its List
// gives, on the ConfigMaps that Owns then watches.
func setupPortedWeb(mgr *manager.Manager) error {
	configMaps, err := cache.Register[*corev1.ConfigMap](mgr.Cache(), cache.TypeOptions{})
	if err != nil {
		return fmt.Errorf("set up ported web: %w", err)
	}
	err = configMaps.AddIndex(ownerKey, func(cm *corev1.ConfigMap) []string {
		if ref := metav1.GetControllerOf(cm); ref != nil && ref.Kind == "Deployment" {
			return []string{ref.Name}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set up ported web: %w", err)
	}
	r := fromControllerRuntime(&crWebReconciler{Client: mgr.CachedClient(), Scheme: mgr.Scheme()})
	if _, err := manager.NewController(mgr, "web", r, manager.For[*appsv1.Deployment](nil), manager.Owns(&configMaps)); err != nil {
		return fmt.Errorf("set up ported web: %w", err)
	}
	return nil
}
