package website

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	examplev1 "github.com/opkit-dev/opkit/examples/website/api/v1"
	examplev1ac "github.com/opkit-dev/opkit/examples/website/api/v1/applyconfiguration/api/v1"
)

// CRWebsiteReconciler is the Website controller on controller-runtime
// v0.25, for comparison with website.go: the reconciler as kubebuilder
// scaffolds it, its builder, controllerutil's finalizer helpers, and
// client.Apply of apply configurations with a field owner and
// ForceOwnership, as controller-runtime's documentation has controllers
// apply.
type CRWebsiteReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// Reconcile implements reconcile.Reconciler.
func (r *CRWebsiteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var site examplev1.Website
	if err := r.Get(ctx, req.NamespacedName, &site); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !site.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(&site, Finalizer) {
			record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Records, Name: site.Namespace + "." + site.Name}}
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
	record := corev1ac.ConfigMap(site.Namespace+"."+site.Name, Records).WithData(map[string]string{"website": site.Namespace + "/" + site.Name})
	if err := r.Apply(ctx, record, client.FieldOwner("website"), client.ForceOwnership); err != nil {
		return ctrl.Result{}, err
	}
	labels := map[string]string{"website": site.Name}
	dep := appsv1ac.Deployment(site.Name, site.Namespace).WithOwnerReferences(metav1ac.OwnerReference().
		WithAPIVersion(examplev1.GroupVersion.String()).WithKind("Website").WithName(site.Name).WithUID(site.UID).
		WithController(true).WithBlockOwnerDeletion(true)).WithSpec(appsv1ac.DeploymentSpec().
		WithReplicas(site.Spec.Replicas).WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("web").WithImage(site.Spec.Image)))))
	if err := r.Apply(ctx, dep, client.FieldOwner("website"), client.ForceOwnership); err != nil {
		return ctrl.Result{}, err
	}
	ready := metav1.Condition{Type: examplev1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Progressing", ObservedGeneration: site.Generation}
	if ptr.Deref(dep.Status.ObservedGeneration, 0) == *dep.Generation && ptr.Deref(dep.Status.AvailableReplicas, 0) == site.Spec.Replicas {
		ready.Status, ready.Reason = metav1.ConditionTrue, "Available"
	}
	meta.SetStatusCondition(&site.Status.Conditions, ready) // keeps lastTransitionTime unless the status changes
	c := meta.FindStatusCondition(site.Status.Conditions, examplev1.ConditionReady)
	status := examplev1ac.WebsiteStatus().WithObservedGeneration(site.Generation).WithConditions(metav1ac.Condition().
		WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).WithMessage(c.Message).
		WithObservedGeneration(c.ObservedGeneration).WithLastTransitionTime(c.LastTransitionTime))
	website := examplev1ac.Website(site.Name, site.Namespace).WithStatus(status)
	return ctrl.Result{}, r.Status().Apply(ctx, website, client.FieldOwner("website"), client.ForceOwnership)
}

// SetupWithManager adds the controller to mgr.
func (r *CRWebsiteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&examplev1.Website{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Complete(r)
}
