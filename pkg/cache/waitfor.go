package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// waitForInterval is how often WaitFor looks at the cache again. A look is
// one Get, which does not allocate (but for the object a metadata-only
// Lister makes): a waiter costs about a hundred map lookups a second, and sees the object at most this long after the cache
// has it.
const waitForInterval = 10 * time.Millisecond

// WaitFor blocks until the cache holds obj's namespace and name at obj's
// resourceVersion or a newer one, or ctx ends: "has the cache caught up
// with my write". Pass the object a write returned, which carries the
// resourceVersion the API server gave it. It looks at the cache every
// 10ms, with one Get.
//
// Versions are compared as Kubernetes 1.35 made them comparable
// (apimachinery's resourceversion.CompareResourceVersion: decimal integers,
// longer is newer). When either is not such an integer, only an equal
// version counts as caught up.
//
// When ctx ends first, the error names the object, the resourceVersion
// waited for and the one cached ("none" if the object is not cached), and
// wraps ctx's cause; if the cache could not be read (not synced, CRD not
// installed, a namespace not cached), it says why instead. A type whose
// informers were removed fails at once with ErrRemoved.
func (l *Lister[T]) WaitFor(ctx context.Context, obj T) error {
	want := obj.GetResourceVersion()
	if want == "" {
		return fmt.Errorf("cache: wait for %s %s: it has no resourceVersion: pass the object the API server returned", l.reg.key.gvk.Kind, objectKey(obj.GetNamespace(), obj.GetName()))
	}
	var t *time.Ticker
	for {
		cached, done, unread, err := l.caughtUp(obj, want)
		if done || err != nil {
			return err
		}
		if t == nil {
			t = time.NewTicker(waitForInterval)
			defer t.Stop()
		}
		select {
		case <-ctx.Done():
			return l.notCaughtUp(ctx, obj, want, cached, unread)
		case <-t.C:
		}
	}
}

func (l *Lister[T]) notCaughtUp(ctx context.Context, obj T, want, cached string, unread error) error {
	what := fmt.Sprintf("%s %s at resourceVersion %s", l.reg.key.gvk.Kind, objectKey(obj.GetNamespace(), obj.GetName()), want)
	if unread != nil {
		return fmt.Errorf("cache: wait for %s: the cache cannot be read: %w: %w", what, unread, context.Cause(ctx))
	}
	if cached == "" {
		cached = "none (the object is not cached)"
	}
	return fmt.Errorf("cache: wait for %s: the cache holds resourceVersion %s: %w", what, cached, context.Cause(ctx))
}

// caughtUp reports the cached resourceVersion of obj ("" if none) and
// whether it is at least want; why it cannot read obj, if it cannot; and
// an error that ends the wait.
func (l *Lister[T]) caughtUp(obj T, want string) (cached string, done bool, unread, err error) {
	got, err := l.Get(obj.GetNamespace(), obj.GetName())
	switch {
	case errors.Is(err, ErrRemoved):
		return "", false, nil, fmt.Errorf("cache: wait for %s %s: %w", l.reg.key.gvk.Kind, objectKey(obj.GetNamespace(), obj.GetName()), err)
	case apierrors.IsNotFound(err):
		return "", false, nil, nil
	case err != nil:
		// Not synced, not installed, unreachable: all may pass.
		return "", false, err, nil
	}
	cached = got.GetResourceVersion()
	return cached, atLeast(cached, want), nil, nil
}

// atLeast reports whether resourceVersion have is want or newer.
func atLeast(have, want string) bool {
	c, err := resourceversion.CompareResourceVersion(have, want)
	if err != nil {
		return have == want
	}
	return c >= 0
}
