package porting_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
)

const cleanupFinalizer = "samples.opkit.dev/cleanup"

// crMirrorReconciler is the controller-runtime side of a Mirror reconciler:
// a finalizer, a status with a condition, and an Event. The copying itself
// is the same on both sides and left out.
type crMirrorReconciler struct {
	crclient.Client
	Recorder     recorder.EventRecorder // mgr.GetEventRecorder("mirror")
	copyInto     func(ctx context.Context, m *v1alpha1.Mirror) (synced int32, err error)
	deleteCopies func(ctx context.Context, m *v1alpha1.Mirror) error
}

func (r *crMirrorReconciler) Reconcile(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
	var m v1alpha1.Mirror
	if err := r.Get(ctx, req.NamespacedName, &m); err != nil {
		return crreconcile.Result{}, crclient.IgnoreNotFound(err)
	}
	if !m.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(&m, cleanupFinalizer) {
			if err := r.deleteCopies(ctx, &m); err != nil {
				return crreconcile.Result{}, err
			}
			controllerutil.RemoveFinalizer(&m, cleanupFinalizer)
			if err := r.Update(ctx, &m); err != nil {
				return crreconcile.Result{}, err
			}
		}
		return crreconcile.Result{}, nil
	}
	if controllerutil.AddFinalizer(&m, cleanupFinalizer) {
		if err := r.Update(ctx, &m); err != nil {
			return crreconcile.Result{}, err
		}
	}
	synced, err := r.copyInto(ctx, &m)
	if err != nil {
		return crreconcile.Result{}, err
	}
	before := m.DeepCopy()
	m.Status.ObservedGeneration = m.Generation
	m.Status.SyncedNamespaces = synced
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSynced, ObservedGeneration: m.Generation,
	})
	if err := r.Status().Patch(ctx, &m, crclient.MergeFrom(before)); err != nil {
		return crreconcile.Result{}, err
	}
	r.Recorder.Eventf(&m, nil, corev1.EventTypeNormal, v1alpha1.ReasonSynced, "Sync", "copied into %d namespaces", synced)
	return crreconcile.Result{}, nil
}

// Before: the recorder comes from the manager and cannot fail.
func Example_mirrorControllerRuntime() {
	var mgr ctrl.Manager // from ctrl.NewManager, with v1alpha1 in its scheme
	r := &crMirrorReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("mirror")}
	if err := ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.Mirror{}).Complete(r); err != nil {
		panic(err)
	}
}
