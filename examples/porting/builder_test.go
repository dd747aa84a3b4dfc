package porting_test

import (
	"context"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// Before: a controller of Deployments on controller-runtime's builder. It
// watches the Deployment (spec changes only), the ConfigMaps it controls,
// and the Secrets labelled with its name.
func Example_builderControllerRuntime() {
	var mgr ctrl.Manager // from ctrl.NewManager
	var r crreconcile.Reconciler
	secretToDeployment := func(_ context.Context, s crclient.Object) []crreconcile.Request {
		return []crreconcile.Request{{NamespacedName: crclient.ObjectKey{Namespace: s.GetNamespace(), Name: s.GetLabels()["app"]}}}
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("web").
		For(&appsv1.Deployment{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(secretToDeployment)).
		Complete(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// After: the same controller on opkit. The watches are arguments of
// NewController; each takes the address of the reconciler's Lister of its
// type, which NewController registers and sets, so the type is named once,
// in the reconciler's field, and the map function takes the typed object.
func Example_builder() {
	var mgr *manager.Manager // from manager.New
	r := &webReconciler{client: mgr.Writer("web"), scheme: mgr.Scheme()}
	secretToDeployment := func(s *corev1.Secret) []reconcile.Request {
		return []reconcile.Request{{Namespace: s.Namespace, Name: s.Labels["app"]}}
	}
	_, err := manager.NewController(mgr, "web", r,
		manager.For(&r.deployments, source.GenerationChanged),
		manager.Owns(&r.configMaps),
		manager.Watches(nil, secretToDeployment), // nil: r reads no Secrets
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
