package website

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// CRWebsiteReconciler is the Website controller on controller-runtime
// v0.25, for comparison with website.go: the reconciler as kubebuilder
// scaffolds it, its builder and controllerutil's helpers.
type CRWebsiteReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// Reconcile implements reconcile.Reconciler.
func (r *CRWebsiteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var site Website
	if err := r.Get(ctx, req.NamespacedName, &site); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Records, Name: site.Namespace + "." + site.Name}}
	if !site.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(&site, Finalizer) {
			if err := r.Delete(ctx, record); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
			controllerutil.RemoveFinalizer(&site, Finalizer)
			if err := r.Update(ctx, &site); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, nil
	}
	if controllerutil.AddFinalizer(&site, Finalizer) {
		if err := r.Update(ctx, &site); err != nil {
			return ctrl.Result{}, err
		}
	}
	record.Data = map[string]string{"website": site.Namespace + "/" + site.Name}
	if err := r.Create(ctx, record); client.IgnoreAlreadyExists(err) != nil {
		return ctrl.Result{}, err
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: site.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		labels := map[string]string{"website": site.Name}
		dep.Spec.Replicas = new(site.Spec.Replicas)
		dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		dep.Spec.Template.Labels = labels
		dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: site.Spec.Image}}
		return controllerutil.SetControllerReference(&site, dep, r.Scheme)
	}); err != nil {
		return ctrl.Result{}, err
	}
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: "Progressing", ObservedGeneration: site.Generation}
	if dep.Status.ObservedGeneration == dep.Generation && dep.Status.AvailableReplicas == site.Spec.Replicas {
		ready.Status, ready.Reason = metav1.ConditionTrue, "Available"
	}
	site.Status.ObservedGeneration = site.Generation
	meta.SetStatusCondition(&site.Status.Conditions, ready)
	return ctrl.Result{}, r.Status().Update(ctx, &site)
}

// SetupWithManager adds the controller to mgr.
func (r *CRWebsiteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&Website{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Complete(r)
}
