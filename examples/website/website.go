package website

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	examplev1 "github.com/opkit-dev/opkit/examples/website/api/v1"
	examplev1ac "github.com/opkit-dev/opkit/examples/website/api/v1/applyconfiguration/api/v1"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/conditions"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/owner"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// WebsiteReconciler runs each Website as a Deployment of its image, keeps
// a record of it in the Records namespace, and reports it Ready once the
// Deployment has every replica available. SetupWebsite sets its Listers.
type WebsiteReconciler struct {
	websites    *cache.Lister[*examplev1.Website] // shared with the cache: read, never modify
	deployments *cache.Lister[*appsv1.Deployment] // watched, so that their status reaches the Website
	client      client.Client
}

// SetupWebsite adds the website controller to mgr, whose scheme must hold
// examplev1's types.
func SetupWebsite(mgr *manager.Manager) error {
	r := &WebsiteReconciler{client: mgr.Writer("website")}
	_, err := manager.NewController(mgr, "website", r, manager.For(&r.websites, source.GenerationChanged),
		manager.Owns(&r.deployments), manager.Finalizer(Finalizer, r.deleteRecord))
	return err
}

// Reconcile implements reconcile.Reconciler. NewController hands it only
// Websites that hold the finalizer and are not being deleted. It applies
// what it decides (the writer owns those fields, and skips an apply that
// would change nothing); Apply fills each configuration with the object
// as the API server holds it.
func (r *WebsiteReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	site, err := r.websites.Get(req.Namespace, req.Name)
	if err != nil {
		return reconcile.Done(), client.IgnoreNotFound(err)
	}
	record := corev1ac.ConfigMap(site.Namespace+"."+site.Name, Records).WithData(map[string]string{"website": site.Namespace + "/" + site.Name})
	if err := r.client.Apply(ctx, record); err != nil {
		return reconcile.Done(), err
	}
	ref, err := owner.ApplyControllerRef(r.client.Scheme(), site)
	if err != nil {
		return reconcile.Done(), err
	}
	labels := map[string]string{"website": site.Name}
	dep := appsv1ac.Deployment(site.Name, site.Namespace).WithOwnerReferences(ref).WithSpec(appsv1ac.DeploymentSpec().
		WithReplicas(site.Spec.Replicas).WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("web").WithImage(site.Spec.Image)))))
	if err := r.client.Apply(ctx, dep); err != nil {
		return reconcile.Done(), err
	}
	ready := metav1.Condition{Type: examplev1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Progressing"}
	if ptr.Deref(dep.Status.ObservedGeneration, 0) == *dep.Generation && ptr.Deref(dep.Status.AvailableReplicas, 0) == site.Spec.Replicas {
		ready.Status, ready.Reason = metav1.ConditionTrue, "Available"
	}
	status := examplev1ac.WebsiteStatus().WithObservedGeneration(site.Generation).
		WithConditions(conditions.ForApply(site.Status.Conditions, site, ready))
	return reconcile.Done(), r.client.Status().Apply(ctx, examplev1ac.Website(site.Name, site.Namespace).WithStatus(status))
}

// deleteRecord deletes the record of a Website being deleted; then the
// finalizer lets the Website go.
func (r *WebsiteReconciler) deleteRecord(ctx context.Context, site *examplev1.Website) error {
	record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Records, Name: site.Namespace + "." + site.Name}}
	return client.IgnoreNotFound(r.client.Delete(ctx, record))
}
