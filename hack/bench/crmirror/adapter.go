package main

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/internal/actlog"
	"github.com/opkit-dev/opkit/pkg/finalizer"
	opkit "github.com/opkit-dev/opkit/pkg/reconcile"
)

// adapter runs an opkit reconciler as a controller-runtime one, mapping the
// request, the result and terminal errors.
type adapter struct {
	r opkit.Reconciler[opkit.Request]
}

var _ ctrl.Reconciler = adapter{}

func (a adapter) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := a.r.Reconcile(ctx, opkit.Request{Namespace: req.Namespace, Name: req.Name})
	if errors.Is(err, opkit.ErrTerminal) {
		err = ctrl.TerminalError(err)
	}
	return result(res), err
}

// result maps opkit's Result to controller-runtime's: a requeue without a
// delay goes through the per-key rate limiter in both.
func result(res opkit.Result) ctrl.Result {
	after, ok := res.Requeue()
	switch {
	case !ok:
		return ctrl.Result{}
	case after > 0:
		return ctrl.Result{RequeueAfter: after}
	default:
		//lint:ignore SA1019 Requeue is controller-runtime's only way to ask for a rate-limited requeue without an error.
		return ctrl.Result{Requeue: true}
	}
}

// finalizing runs the Mirror's finalizer as manager.Finalizer does for
// the sample on opkit: finalizer.Finalize before each reconcile of a
// Mirror the store holds, and the reconciler's Cleanup instead of the
// reconciler for one being deleted.
type finalizing struct {
	r       ctrl.Reconciler
	store   mirror.Store
	client  client.Client
	cleanup func(context.Context, *v1alpha1.Mirror) error
}

var _ ctrl.Reconciler = finalizing{}

func (f finalizing) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	m, err := f.store.Mirror(req.Namespace, req.Name)
	if err != nil {
		return f.r.Reconcile(ctx, req)
	}
	deleting, err := finalizer.Finalize(ctx, f.client, m, mirror.Finalizer, func(ctx context.Context) error { return f.cleanup(ctx, m) })
	if deleting || err != nil {
		return ctrl.Result{}, err
	}
	return f.r.Reconcile(ctx, req)
}

// recorded records each reconcile of r in acts, as the sample's
// --record-reconciles does (the key is namespace/name).
type recorded struct {
	r    ctrl.Reconciler
	acts *actlog.File
}

var _ ctrl.Reconciler = recorded{}

func (r recorded) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.Namespace + "/" + req.Name
	r.acts.Start(key, time.Now())
	defer r.acts.End(key)
	return r.r.Reconcile(ctx, req)
}
