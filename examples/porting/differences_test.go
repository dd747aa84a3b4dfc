package porting_test

import (
	"context"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// Before: one filter for every watch of the controller.
func Example_eventFilterControllerRuntime() {
	var mgr ctrl.Manager // from ctrl.NewManager
	var r crreconcile.Reconciler
	err := ctrl.NewControllerManagedBy(mgr).
		Named("web").
		For(&appsv1.Deployment{}).
		Owns(&appsv1.ReplicaSet{}).
		WithEventFilter(predicate.GenerationChangedPredicate{}).
		Complete(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// After: the filter on each watch it applies to; a predicate is typed by
// its watch's type, which it infers.
func Example_eventFilter() {
	var mgr *manager.Manager // from manager.New
	r := &rolloutReconciler{}
	_, err := manager.NewController(mgr, "web", r,
		manager.For(&r.deployments, source.GenerationChanged),
		manager.Owns(&r.replicaSets, source.GenerationChanged),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Before: health and readiness checks.
func Example_healthChecksControllerRuntime() {
	var mgr ctrl.Manager // from ctrl.NewManager
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// After: other method names; the checks themselves, controller-runtime's
// healthz.Checker included, are the same functions of an *http.Request.
func Example_healthChecks() {
	var mgr *manager.Manager // from manager.New
	if err := mgr.AddHealthCheck("healthz", healthz.Ping); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	if err := mgr.AddReadyCheck("readyz", healthz.Ping); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// rolloutReconciler reads the Deployments and ReplicaSets it watches.
type rolloutReconciler struct {
	deployments *cache.Lister[*appsv1.Deployment]
	replicaSets *cache.Lister[*appsv1.ReplicaSet]
}

func (r *rolloutReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// ctrl.LoggerFrom(ctx) finds the reconcile's logger too.
	log := ctrl.LoggerFrom(ctx)
	d, err := r.deployments.Get(req.Namespace, req.Name)
	if apierrors.IsNotFound(err) {
		return reconcile.Done(), nil // deleted; its ReplicaSets go with it
	}
	if err != nil {
		return reconcile.Done(), err
	}
	log.V(1).Info("Rolling out", "replicas", d.Spec.Replicas)
	return reconcile.Done(), nil
}
