package crport

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// Reconciler runs a controller-runtime reconciler as an opkit one: it
// translates the request and the result, and keeps controller-runtime's
// terminal errors terminal (opkit would otherwise retry them). Requeue
// without RequeueAfter is a retry with the queue's backoff, as it is on
// controller-runtime.
func Reconciler(r crreconcile.Reconciler) reconcile.Reconciler[reconcile.Request] {
	return reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, crreconcile.Request{NamespacedName: crclient.ObjectKey{Namespace: req.Namespace, Name: req.Name}})
		switch {
		case errors.Is(err, crreconcile.TerminalError(nil)):
			return reconcile.Done(), reconcile.Terminal(err)
		case err != nil:
			return reconcile.Done(), err
		case res.RequeueAfter > 0:
			return reconcile.RequeueAfter(res.RequeueAfter), nil
		case res.Requeue: //lint:ignore SA1019 ported code may still set it
			return reconcile.RequeueWithBackoff(), nil
		}
		return reconcile.Done(), nil
	})
}

// MapFunc turns a controller-runtime map function, the argument of
// handler.EnqueueRequestsFromMapFunc, into the typed one manager.Watches
// takes. opkit calls it on the informer's goroutine, without a context of
// its own: f gets context.Background(), and must read only from caches,
// as it must on controller-runtime.
func MapFunc[T cache.Object](f handler.MapFunc) func(T) []reconcile.Request {
	return func(obj T) []reconcile.Request {
		reqs := f(context.Background(), obj)
		if len(reqs) == 0 {
			return nil
		}
		out := make([]reconcile.Request, len(reqs))
		for i, r := range reqs {
			out[i] = reconcile.Request{Namespace: r.Namespace, Name: r.Name}
		}
		return out
	}
}

// Predicate turns controller-runtime predicates (builder.WithPredicates,
// WithEventFilter) into one opkit predicate of T, true when every one of
// ps is: Create, Update and Delete are asked as controller-runtime asks
// them (a delete whose final state was missed has DeleteStateUnknown).
// opkit has no generic events on a watch of a type, so Generic is never
// asked.
func Predicate[T cache.Object](ps ...predicate.Predicate) source.Predicate[T] {
	return func(e source.Event[T]) bool {
		for _, p := range ps {
			var ok bool
			switch e.Type {
			case source.Create:
				ok = p.Create(event.CreateEvent{Object: e.Object, IsInInitialList: e.InInitialList})
			case source.Update:
				ok = p.Update(event.UpdateEvent{ObjectOld: e.Old, ObjectNew: e.Object})
			case source.Delete:
				ok = p.Delete(event.DeleteEvent{Object: e.Object, DeleteStateUnknown: e.StateUnknown})
			default:
				ok = true
			}
			if !ok {
				return false
			}
		}
		return true
	}
}

// Paths are custom paths of a kind's webhooks, as kubebuilder's
// WithDefaulterCustomPath and WithValidatorCustomPath set them. An empty
// path is kubebuilder's own (webhook.MutatePath, webhook.ValidatePath).
type Paths struct {
	Defaulting string
	Validation string
}

// Webhooks serves hooks on mgr's webhook server, at kubebuilder's paths or
// at the custom ones in paths, as controller-runtime's
// NewWebhookManagedBy(...).WithDefaulter(...).WithValidator(...) does. A
// custom path for a hook that hooks lacks is an error, as it is on
// controller-runtime.
func Webhooks[T runtime.Object](mgr *manager.Manager, hooks webhook.Hooks[T], paths Paths) error {
	if paths.Defaulting != "" && hooks.Defaulter == nil {
		return fmt.Errorf("crport: a defaulting path %q without a Defaulter", paths.Defaulting)
	}
	if paths.Validation != "" && hooks.Validator == nil {
		return fmt.Errorf("crport: a validation path %q without a Validator", paths.Validation)
	}
	if paths == (Paths{}) {
		return webhook.Register(mgr, hooks)
	}
	handlers, err := webhook.Handlers(mgr, hooks)
	if err != nil {
		return err
	}
	for path, h := range handlers {
		if err := webhook.Serve(mgr, customPath(path, paths), h); err != nil {
			return err
		}
	}
	return nil
}

// customPath is where the handler webhook.Handlers serves at path goes.
func customPath(path string, paths Paths) string {
	switch {
	case paths.Defaulting != "" && strings.HasPrefix(path, "/mutate-"):
		return paths.Defaulting
	case paths.Validation != "" && strings.HasPrefix(path, "/validate-"):
		return paths.Validation
	}
	return path
}

// ObjectKey is the map function of controller-runtime's
// handler.EnqueueRequestForObject: the object's own key.
func ObjectKey[T cache.Object](obj T) []reconcile.Request {
	return []reconcile.Request{{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
}

// UntypedDefaulter is controller-runtime's admission.CustomDefaulter: a
// defaulter of any object.
type UntypedDefaulter interface {
	Default(ctx context.Context, obj runtime.Object) error
}

// UntypedValidator is controller-runtime's admission.CustomValidator: a
// validator of any object.
type UntypedValidator interface {
	ValidateCreate(ctx context.Context, obj runtime.Object) (webhook.Warnings, error)
	ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (webhook.Warnings, error)
	ValidateDelete(ctx context.Context, obj runtime.Object) (webhook.Warnings, error)
}

// TypedDefaulter gives a defaulter of controller-runtime's untyped
// interface (admission.CustomDefaulter, Default(ctx, runtime.Object)),
// as webhooks written for controller-runtime before 0.23 have, the typed
// interface webhook.Hooks takes.
func TypedDefaulter[T runtime.Object](d UntypedDefaulter) webhook.Defaulter[T] {
	return webhook.DefaulterFunc[T](func(ctx context.Context, obj T) error { return d.Default(ctx, obj) })
}

// TypedValidator gives a validator of controller-runtime's untyped
// interface (admission.CustomValidator) the typed interface webhook.Hooks
// takes.
func TypedValidator[T runtime.Object](v UntypedValidator) webhook.Validator[T] {
	return webhook.ValidatorFuncs[T]{
		Create: func(ctx context.Context, obj T) (webhook.Warnings, error) { return v.ValidateCreate(ctx, obj) },
		Update: func(ctx context.Context, old, obj T) (webhook.Warnings, error) {
			return v.ValidateUpdate(ctx, old, obj)
		},
		Delete: func(ctx context.Context, obj T) (webhook.Warnings, error) { return v.ValidateDelete(ctx, obj) },
	}
}
