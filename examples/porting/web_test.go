package porting_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/owner"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// webReconciler is crWebReconciler ported to opkit's idioms: Listers for
// reads, the controlled-by index for children, owner.ControllerRef for the
// reference, and Result constructors.
type webReconciler struct {
	deployments *cache.Lister[*appsv1.Deployment]
	configMaps  *cache.Lister[*corev1.ConfigMap] // manager.Owns gave it the controlled-by index
	client      crclient.Client                  // mgr.Writer("web"): writes with the controller's field owner
	scheme      *runtime.Scheme
}

var _ reconcile.Reconciler[reconcile.Request] = (*webReconciler)(nil)

func (r *webReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	dep, err := r.deployments.Get(req.Namespace, req.Name) // the cached object: read it, never modify it
	if apierrors.IsNotFound(err) {
		return reconcile.Done(), nil
	}
	if err != nil {
		return reconcile.Done(), err
	}
	config := dep.Annotations["example.com/config"]
	if config == "" {
		return reconcile.Done(), reconcile.Terminal(errors.New("annotation example.com/config is missing"))
	}
	children, err := r.configMaps.ControlledBy(dep) // in dep's namespace, by dep's UID
	if err != nil {
		return reconcile.Done(), err
	}
	if len(children) == 0 {
		ref, err := owner.ControllerRef(r.scheme, dep) // a value: dep is not modified
		if err != nil {
			return reconcile.Done(), err
		}
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: dep.Namespace, Name: dep.Name + "-config", OwnerReferences: []metav1.OwnerReference{ref}},
			Data:       map[string]string{"config": config},
		}
		if err := r.client.Create(ctx, cm); err != nil {
			return reconcile.Done(), fmt.Errorf("create ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
	}
	return reconcile.RequeueAfter(10 * time.Minute), nil
}

// setupWeb adds the web controller to mgr. NewController registers the
// types the reconciler reads and sets its Listers; manager.Owns adds the
// controlled-by index that ControlledBy reads, so there is no index to
// write.
func setupWeb(mgr *manager.Manager) error {
	r := &webReconciler{client: mgr.Writer("web"), scheme: mgr.Scheme()}
	if _, err := manager.NewController(mgr, "web", r, manager.For(&r.deployments), manager.Owns(&r.configMaps)); err != nil {
		return fmt.Errorf("set up web: %w", err)
	}
	return nil
}

// After: a main that runs the web controller (TestWebReconciler runs it on
// the test control plane).
func Example_web() {
	cfg, err := manager.Config("") // --kubeconfig, KUBECONFIG, in-cluster, ~/.kube/config
	if err != nil {
		panic(err)
	}
	mgr, err := manager.New(cfg, manager.Options{})
	if err != nil {
		panic(err)
	}
	if err := setupWeb(mgr); err != nil {
		panic(err)
	}
	if err := mgr.Start(manager.SignalContext()); err != nil {
		panic(err)
	}
}
