package porting_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// Ported as is: controller-runtime reads run on the manager's cached client,
// which copies each object out of opkit's cache. Register the kinds the
// reads ask for, and each index under the name MatchingFields gives it.
func Example_cachedClient() {
	var cfg *rest.Config // from manager.Config
	mgr, err := manager.New(cfg, manager.Options{})
	if err != nil {
		panic(err)
	}
	if _, err := cache.Register[*appsv1.Deployment](mgr.Cache(), cache.TypeOptions{}); err != nil {
		panic(err)
	}
	configMaps, err := cache.Register[*corev1.ConfigMap](mgr.Cache(), cache.TypeOptions{})
	if err != nil {
		panic(err)
	}
	err = configMaps.AddIndex(ownerKey, func(cm *corev1.ConfigMap) []string {
		ref := metav1.GetControllerOf(cm)
		if ref == nil || ref.Kind != "Deployment" {
			return nil
		}
		return []string{ref.Name}
	})
	if err != nil {
		panic(err)
	}
	cl := mgr.CachedClient()

	// In the ported Reconcile, once the manager has started:
	ctx := context.Background()
	var dep appsv1.Deployment
	if err := cl.Get(ctx, crclient.ObjectKey{Namespace: "shop", Name: "web"}, &dep); err != nil {
		panic(err)
	}
	var children corev1.ConfigMapList
	if err := cl.List(ctx, &children, crclient.InNamespace(dep.Namespace), crclient.MatchingFields{ownerKey: dep.Name}); err != nil {
		panic(err)
	}
	fmt.Println(len(children.Items))
}

// Before: a field index on controller-runtime, and a List scoped by it to
// one namespace.
func Example_fieldIndexControllerRuntime() {
	var mgr ctrl.Manager // from ctrl.NewManager
	ctx := context.Background()
	err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, "spec.serviceAccountName", func(o crclient.Object) []string {
		return []string{o.(*corev1.Pod).Spec.ServiceAccountName}
	})
	if err != nil {
		panic(err)
	}
	// In a reconcile of ServiceAccount shop/builder:
	var users corev1.PodList
	err = mgr.GetClient().List(ctx, &users, crclient.InNamespace("shop"), crclient.MatchingFields{"spec.serviceAccountName": "builder"})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(users.Items))
}

// After: an index on the Lister, looked up in one namespace. ByIndex, like
// client-go's Indexer, searches every namespace.
func Example_fieldIndex() {
	var mgr *manager.Manager // from manager.New
	pods, err := cache.Register[*corev1.Pod](mgr.Cache(), cache.TypeOptions{})
	if err != nil {
		panic(err)
	}
	err = pods.AddIndex("serviceAccount", func(p *corev1.Pod) []string {
		return []string{p.Spec.ServiceAccountName}
	})
	if err != nil {
		panic(err)
	}
	// In a reconcile of ServiceAccount shop/builder, once the cache has synced:
	users, err := pods.ByIndexInNamespace("shop", "serviceAccount", "builder")
	if err != nil {
		panic(err)
	}
	everywhere, err := pods.ByIndex("serviceAccount", "builder") // also the pods of builders in other namespaces
	if err != nil {
		panic(err)
	}
	fmt.Println(len(users), len(everywhere))
}
