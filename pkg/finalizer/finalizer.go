package finalizer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrInvalidName is wrapped by the error for a finalizer name that Ensure,
// Remove or Finalize refuse.
var ErrInvalidName = errors.New("invalid finalizer name")

// ErrDeleting is wrapped by the error of Ensure on an object that is being
// deleted: the API server refuses new finalizers then.
var ErrDeleting = errors.New("object is being deleted")

// Validate reports whether name is a finalizer name that Ensure and Finalize
// accept: a qualified name with a DNS subdomain prefix, such as
// samples.opkit.dev/cleanup. The API server refuses other names on
// built-in types and warns about them on custom resources: they collide
// between controllers.
func Validate(name string) error {
	return validate(name, true)
}

func validate(name string, needPrefix bool) error {
	msgs := validation.IsQualifiedName(name)
	if len(msgs) == 0 && needPrefix && !strings.Contains(name, "/") {
		msgs = []string{"must have a domain prefix you own, e.g. samples.opkit.dev/cleanup, so that it cannot collide with another controller's"}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%w %q: %s", ErrInvalidName, name, strings.Join(msgs, "; "))
	}
	return nil
}

// Ensure makes obj hold the finalizer name, appending it with a JSON patch
// unless obj already holds it, in which case it sends no request. It reports
// whether it added it. It does not modify obj.
//
// The patch applies only if the object's finalizers are still those of obj
// and the object is not being deleted; otherwise Ensure returns a Conflict
// error (apierrors.IsConflict), to be retried on fresher state. On an obj
// that is being deleted it returns an error wrapping ErrDeleting and sends
// nothing.
func Ensure(ctx context.Context, c client.Client, obj client.Object, name string) (added bool, err error) {
	if err := validate(name, true); err != nil {
		return false, err
	}
	if slices.Contains(obj.GetFinalizers(), name) {
		return false, nil
	}
	if obj.GetDeletionTimestamp() != nil {
		return false, fmt.Errorf("add finalizer %s to %s: %w", name, describe(obj), ErrDeleting)
	}
	if err := patch(ctx, c, obj, ensureOps(obj.GetFinalizers(), name), "its finalizers or deletion"); err != nil {
		return false, fmt.Errorf("add finalizer %s to %s: %w", name, describe(obj), err)
	}
	return true, nil
}

// Remove makes obj no longer hold the finalizer name, deleting each of its
// entries with a JSON patch, unless obj does not hold it, in which case it
// sends no request. It reports whether it removed it; an object that no
// longer exists is not an error. It does not modify obj.
//
// Each entry is removed only if the object still holds name at the index it
// has in obj; otherwise Remove returns a Conflict error
// (apierrors.IsConflict), to be retried on fresher state.
func Remove(ctx context.Context, c client.Client, obj client.Object, name string) (removed bool, err error) {
	if err := validate(name, false); err != nil {
		return false, err
	}
	ops := removeOps(obj.GetFinalizers(), name)
	if len(ops) == 0 {
		return false, nil
	}
	err = patch(ctx, c, obj, ops, "its finalizers")
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("remove finalizer %s from %s: %w", name, describe(obj), err)
	}
	return true, nil
}

// Finalize runs the finalizer protocol for obj and reports whether obj is
// being deleted, in which case the reconciler must do nothing else with it:
//
//   - obj is not being deleted: Finalize ensures the finalizer (see Ensure)
//     and reports false;
//   - obj is being deleted and holds the finalizer: Finalize runs cleanup
//     and, once it succeeds, removes the finalizer (see Remove);
//   - obj is being deleted without the finalizer: there is nothing left to
//     do, and cleanup does not run.
//
// An error from cleanup is returned wrapped, and the finalizer stays, so the
// reconcile retries and runs cleanup again: it must be idempotent. Finalize
// does not modify obj. It reports "deleting" rather than "done": that
// tells the reconciler what state the object is in, whatever Finalize
// managed to do.
func Finalize(ctx context.Context, c client.Client, obj client.Object, name string, cleanup func(context.Context) error) (deleting bool, err error) {
	if err := validate(name, true); err != nil {
		return false, err
	}
	if obj.GetDeletionTimestamp() == nil {
		_, err := Ensure(ctx, c, obj, name)
		return false, err
	}
	if !slices.Contains(obj.GetFinalizers(), name) {
		return true, nil
	}
	if err := cleanup(ctx); err != nil {
		return true, fmt.Errorf("clean up %s before removing finalizer %s: %w", describe(obj), name, err)
	}
	_, err = Remove(ctx, c, obj, name)
	return true, err
}

func describe(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
