// Package controller holds the guestbook's controllers.
package controller

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	guestbookv1 "example.com/guestbook/api/v1"
)

// GuestReconciler gives each Guest a ConfigMap that greets it.
type GuestReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Greeting string
}

// +kubebuilder:rbac:groups=guestbook.example.com,resources=guests,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile writes the Guest's ConfigMap: the greeting, the guest's name,
// the UID of its namespace (a kind it reads and does not watch), and how
// many Secrets name the guest (read through a field index).
func (r *GuestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	guest := &guestbookv1.Guest{}
	if err := r.Get(ctx, req.NamespacedName, guest); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var ns corev1.Namespace
	if err := r.Get(ctx, client.ObjectKey{Name: guest.Namespace}, &ns); err != nil {
		return ctrl.Result{}, err
	}
	var secrets corev1.SecretList
	if err := r.List(ctx, &secrets, client.InNamespace(guest.Namespace), client.MatchingFields{SecretGuestField: guest.Name}); err != nil {
		return ctrl.Result{}, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: guest.Namespace, Name: "guest-" + guest.Name}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{"greeting": r.Greeting + ", " + guest.Spec.Name, "namespace-uid": string(ns.UID), "secrets": strconv.Itoa(len(secrets.Items))}
		return controllerutil.SetControllerReference(guest, cm, r.Scheme)
	})
	if apierrors.IsConflict(err) {
		return ctrl.Result{Requeue: true}, nil
	}
	return ctrl.Result{}, err
}

// SecretGuestField indexes Secrets by the Guest their "guest" label names.
const SecretGuestField = ".metadata.labels.guest"

// SetupIndexes adds the field indexes the reconciler lists with.
func SetupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &corev1.Secret{}, SecretGuestField, func(obj client.Object) []string {
		if name := obj.GetLabels()["guest"]; name != "" {
			return []string{name}
		}
		return nil
	})
}

// secretToGuests asks for the Guest a Secret names in its "guest" label.
func (r *GuestReconciler) secretToGuests(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()["guest"]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// SetupWithManager sets up the controller with the Manager.
func (r *GuestReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&guestbookv1.Guest{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretToGuests)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Named("guest").
		Complete(r)
}
