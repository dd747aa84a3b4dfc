package porting_test

import (
	"context"
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ownerKey is the field index of the kubebuilder book: ConfigMaps by the
// name of the Deployment that controls them.
const ownerKey = ".metadata.controller"

// crWebReconciler is the controller-runtime reconciler being ported: it
// gives each Deployment a ConfigMap holding its example.com/config
// annotation, and looks again every ten minutes.
type crWebReconciler struct {
	crclient.Client // the manager's client: reads are deep copies from its cache
	Scheme          *runtime.Scheme
}

func (r *crWebReconciler) Reconcile(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
	var dep appsv1.Deployment
	if err := r.Get(ctx, req.NamespacedName, &dep); err != nil {
		return crreconcile.Result{}, crclient.IgnoreNotFound(err)
	}
	config := dep.Annotations["example.com/config"]
	if config == "" {
		return crreconcile.Result{}, crreconcile.TerminalError(errors.New("annotation example.com/config is missing"))
	}
	var children corev1.ConfigMapList
	if err := r.List(ctx, &children, crclient.InNamespace(dep.Namespace), crclient.MatchingFields{ownerKey: dep.Name}); err != nil {
		return crreconcile.Result{}, err
	}
	if len(children.Items) == 0 {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: dep.Namespace, Name: dep.Name + "-config"},
			Data:       map[string]string{"config": config},
		}
		if err := controllerutil.SetControllerReference(&dep, cm, r.Scheme); err != nil {
			return crreconcile.Result{}, err
		}
		if err := r.Create(ctx, cm); err != nil {
			return crreconcile.Result{}, err
		}
	}
	return crreconcile.Result{RequeueAfter: 10 * time.Minute}, nil
}

// Before: the index of owners' names, registered with the manager's field
// indexer, and the controller.
func Example_webControllerRuntime() {
	var mgr ctrl.Manager // from ctrl.NewManager
	ctx := context.Background()
	err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.ConfigMap{}, ownerKey, func(o crclient.Object) []string {
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.Kind != "Deployment" {
			return nil
		}
		return []string{ref.Name}
	})
	if err != nil {
		panic(err)
	}
	r := &crWebReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
	if err := ctrl.NewControllerManagedBy(mgr).For(&appsv1.Deployment{}).Owns(&corev1.ConfigMap{}).Complete(r); err != nil {
		panic(err)
	}
}
