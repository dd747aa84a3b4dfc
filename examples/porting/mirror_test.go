package porting_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	mirrorac "github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1/applyconfiguration/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/conditions"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// mirrorReconciler is crMirrorReconciler on opkit: it reads the Mirror
// from a Lister, and applies its status, reading that shared object
// without modifying it.
// The controller runs the finalizer (manager.Finalizer in setupMirror):
// the reconciler never sees a Mirror being deleted.
type mirrorReconciler struct {
	mirrors      *cache.Lister[*v1alpha1.Mirror]
	client       crclient.Client      // mgr.Writer("mirror")
	recorder     events.EventRecorder // from mgr.EventRecorder("mirror")
	copyInto     func(ctx context.Context, m *v1alpha1.Mirror) (synced int32, err error)
	deleteCopies func(ctx context.Context, m *v1alpha1.Mirror) error
}

func (r *mirrorReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	m, err := r.mirrors.Get(req.Namespace, req.Name)
	if apierrors.IsNotFound(err) {
		return reconcile.Done(), nil
	}
	if err != nil {
		return reconcile.Done(), err
	}
	synced, err := r.copyInto(ctx, m)
	if err != nil {
		return reconcile.Done(), err
	}
	st := mirrorac.MirrorStatus().WithObservedGeneration(m.Generation).WithSyncedNamespaces(synced).
		WithConditions(conditions.ForApply(m.Status.Conditions, m, metav1.Condition{ // reads m, never modifies it
			Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSynced,
		}))
	if err := r.client.Status().Apply(ctx, mirrorac.Mirror(m.Name, m.Namespace).WithStatus(st)); err != nil { // sent only if it changes something
		return reconcile.Done(), err
	}
	r.recorder.Eventf(m, nil, corev1.EventTypeNormal, v1alpha1.ReasonSynced, "Sync", "copied into %d namespaces", synced)
	return reconcile.Done(), nil
}

// setupMirror registers the Mirror controller with mgr, whose scheme must
// hold v1alpha1. EventRecorder checks the name, which the API server would
// otherwise refuse in every Event, and so returns an error.
func setupMirror(mgr *manager.Manager, r *mirrorReconciler) error {
	rec, err := mgr.EventRecorder("mirror")
	if err != nil {
		return fmt.Errorf("set up mirror: %w", err)
	}
	r.client, r.recorder = mgr.Writer("mirror"), rec
	_, err = manager.NewController(mgr, "mirror", r,
		manager.For(&r.mirrors), manager.Finalizer(cleanupFinalizer, r.deleteCopies))
	if err != nil {
		return fmt.Errorf("set up mirror: %w", err)
	}
	return nil
}

// A name the API server would refuse as an Event's reportingController is
// refused up front; controller-runtime's GetEventRecorder takes any name.
func Example_eventRecorderName() {
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = mgr.EventRecorder("Mirror Controller")
	fmt.Println(err)
	// Output:
	// manager: EventRecorder("Mirror Controller"): the name must be a qualified name, such as "mirror" or "example.com/mirror", as the API server refuses Events reported by any other: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')
}
