package manager

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/finalizer"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// Finalizer makes the controller hold each object of its primary type
// with the finalizer name until cleanup has succeeded for it, so that the
// reconciler only ever sees objects that are not being deleted:
//
//   - Before the reconciler runs for an object that is not being deleted,
//     the controller adds the finalizer if the object lacks it (a guarded
//     JSON patch, written with Writer(name); nothing is sent when the
//     object holds it).
//   - For an object being deleted that holds the finalizer, the controller
//     calls cleanup instead of the reconciler, and once cleanup returns
//     nil removes the finalizer, so that the API server deletes the
//     object. An error from cleanup is retried with backoff, as a
//     reconcile's is: cleanup must be idempotent.
//   - An object being deleted without the finalizer is left alone.
//   - A key whose object the cache does not hold (deleted, or not seen
//     yet) goes to the reconciler as it is.
//
// cleanup is given the cached object: read it, never modify it. T is
// inferred from cleanup, and must be the For type. name must be
// domain-qualified, such as example.com/cleanup (finalizer.Validate).
// This is finalizer.Finalize run before each reconcile; a reconciler that
// is not run by NewController calls that itself.
func Finalizer[T cache.Object](name string, cleanup func(ctx context.Context, obj T) error) ControllerOption {
	return optionFunc(func(b *builder) error {
		if err := finalizer.Validate(name); err != nil {
			return fmt.Errorf("Finalizer: %w", err)
		}
		if cleanup == nil {
			return fmt.Errorf("Finalizer %s: cleanup is nil", name)
		}
		if b.finalize != nil {
			return errors.New("two Finalizers: a controller holds its objects with one finalizer")
		}
		b.finalize = func(b *builder, r reconcile.Reconciler[reconcile.Request]) (reconcile.Reconciler[reconcile.Request], error) {
			objects, ok := b.primaryLister.(*cache.Lister[T])
			if !ok {
				return nil, fmt.Errorf("Finalizer %s: cleanup takes %v, and the For type is %v: they must be the same", name, reflect.TypeFor[T](), b.primaryType)
			}
			return &finalizing[T]{r: r, objects: objects, client: b.m.Writer(b.name), name: name, cleanup: cleanup}, nil
		}
		return nil
	})
}

// finalizing runs the finalizer protocol before the reconciler.
type finalizing[T cache.Object] struct {
	r       reconcile.Reconciler[reconcile.Request]
	objects *cache.Lister[T] // the For type's
	client  client.Client
	name    string
	cleanup func(context.Context, T) error
}

var _ reconcile.Reconciler[reconcile.Request] = (*finalizing[cache.Object])(nil)

func (f *finalizing[T]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj, err := f.objects.Get(req.Namespace, req.Name)
	if err != nil {
		return f.r.Reconcile(ctx, req)
	}
	deleting, err := finalizer.Finalize(ctx, f.client, obj, f.name, func(ctx context.Context) error { return f.cleanup(ctx, obj) })
	if deleting || err != nil {
		return reconcile.Done(), err
	}
	return f.r.Reconcile(ctx, req)
}
