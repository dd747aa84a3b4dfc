package status

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Option changes how Patch writes.
type Option func(*options)

type options struct{ lock bool }

// WithOptimisticLock guards the patch with cached's resourceVersion: if the
// object changed in any way since it was cached, the API server refuses the
// patch with a Conflict and nothing is written.
func WithOptimisticLock() Option { return func(o *options) { o.lock = true } }

// Patch applies mutate to a deep copy of cached and, if that changed the
// copy, sends the difference to the status subresource as a JSON merge patch.
// It reports whether it sent it. cached is only read, and may come from a
// Lister. mutate must change the status only; it runs once, before any
// request. The written status reaches the caller as every write does:
// through the cache, in a later reconcile.
//
// The copy is compared with cached by equality.Semantic.DeepEqual (nil and
// empty are equal, times compare as instants). Unguarded by default, as
// controller-runtime's Status().Patch with client.MergeFrom, so that a
// cache a little behind the object (just after the reconcile's own
// finalizer or label write, say) does not turn every status write into a
// Conflict and a retry.
func Patch[T client.Object](ctx context.Context, c client.Client, cached T, mutate func(T), opts ...Option) (patched bool, err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cp, ok := cached.DeepCopyObject().(T)
	if !ok {
		return false, fmt.Errorf("copy %s/%s: %T.DeepCopyObject does not return a %T", cached.GetNamespace(), cached.GetName(), cached, cached)
	}
	mutate(cp)
	if equality.Semantic.DeepEqual(cached, cp) {
		return false, nil
	}
	patch := client.MergeFrom(cached)
	if o.lock {
		patch = client.MergeFromWithOptions(cached, client.MergeFromWithOptimisticLock{})
	}
	if err := c.Status().Patch(ctx, cp, patch); err != nil {
		return false, fmt.Errorf("patch status of %s/%s: %w", cached.GetNamespace(), cached.GetName(), err)
	}
	return true, nil
}
