package website

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/conditions"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// WebsiteReconciler runs each Website as a Deployment of its image, keeps
// a record of it in the Records namespace, and reports it Ready once the
// Deployment has every replica available. SetupWebsite sets its Listers.
type WebsiteReconciler struct {
	websites    *cache.Lister[*Website]           // shared with the cache: read, never modify
	deployments *cache.Lister[*appsv1.Deployment] // watched; CreateOrUpdate reads them through client
	client      client.Client
}

// SetupWebsite adds the website controller to mgr, whose scheme must hold
// this package's types.
func SetupWebsite(mgr *manager.Manager) error {
	r := &WebsiteReconciler{client: mgr.Writer("website")}
	_, err := manager.NewController(mgr, "website", r, manager.For(&r.websites, source.GenerationChanged),
		manager.Owns(&r.deployments), manager.Finalizer(Finalizer, r.deleteRecord))
	return err
}

// Reconcile implements reconcile.Reconciler. NewController hands it only
// Websites that hold the finalizer and are not being deleted.
func (r *WebsiteReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	site, err := r.websites.Get(req.Namespace, req.Name)
	if err != nil {
		return reconcile.Done(), client.IgnoreNotFound(err)
	}
	record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Records, Name: site.Namespace + "." + site.Name}}
	record.Data = map[string]string{"website": site.Namespace + "/" + site.Name}
	if err := r.client.Create(ctx, record); client.IgnoreAlreadyExists(err) != nil {
		return reconcile.Done(), err
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: site.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.client, dep, func() error {
		labels := map[string]string{"website": site.Name}
		dep.Spec.Replicas = new(site.Spec.Replicas)
		dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		dep.Spec.Template.Labels = labels
		dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: site.Spec.Image}}
		return controllerutil.SetControllerReference(site, dep, r.client.Scheme())
	}); err != nil {
		return reconcile.Done(), err
	}
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: "Progressing"}
	if dep.Status.ObservedGeneration == dep.Generation && dep.Status.AvailableReplicas == site.Spec.Replicas {
		ready.Status, ready.Reason = metav1.ConditionTrue, "Available"
	}
	next := site.DeepCopy() // the status to write, on a copy of the cached Website
	next.Status.ObservedGeneration = site.Generation
	conditions.Set(&next.Status.Conditions, site, ready)
	return reconcile.Done(), r.client.Status().Patch(ctx, next, client.MergeFrom(site)) // sent only if it changed
}

// deleteRecord deletes the record of a Website being deleted; then the
// finalizer lets the Website go.
func (r *WebsiteReconciler) deleteRecord(ctx context.Context, site *Website) error {
	record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Records, Name: site.Namespace + "." + site.Name}}
	return client.IgnoreNotFound(r.client.Delete(ctx, record))
}
