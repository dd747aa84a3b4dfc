package porting_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/crport"
	"github.com/opkit-dev/opkit/pkg/manager"
)

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
	r := crport.Reconciler(&crWebReconciler{Client: mgr.CachedClient(), Scheme: mgr.Scheme()})
	if _, err := manager.NewController(mgr, "web", r, manager.For[*appsv1.Deployment](nil), manager.Owns(&configMaps)); err != nil {
		return fmt.Errorf("set up ported web: %w", err)
	}
	return nil
}
