package source

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// Kind is the Source of a type cached by pkg/cache: it hands the events of
// the type's informers, through its predicates, to its handler.
//
// It attaches to the Lister with AddEventHandler, so it may be started
// before the cache, or before the type's CRD is installed, and misses
// nothing. Its handler is detached when the context passed to Start ends.
type Kind[T cache.Object, K comparable] struct {
	s eventSource[T, K]
}

var (
	_ Source[int] = (*Kind[cache.Object, int])(nil)
	_ Syncing     = (*Kind[cache.Object, int])(nil)
)

// NewKind returns the source of l's events, queued by h and kept if every
// one of preds keeps them.
func NewKind[T cache.Object, K comparable](l *cache.Lister[T], h Handler[T, K], preds ...Predicate[T]) *Kind[T, K] {
	k := &Kind[T, K]{s: eventSource[T, K]{handler: h, preds: slices.Clone(preds)}}
	var gvk schema.GroupVersionKind
	if l != nil {
		gvk = l.GroupVersionKind()
	}
	k.s.typ = gvkString(gvk)
	k.s.name = fmt.Sprintf("source.Kind[%v] of %s", reflect.TypeFor[T](), k.s.typ)
	k.s.attach = func(eh toolscache.ResourceEventHandler) (attachment, error) {
		if l == nil {
			return nil, fmt.Errorf("the Lister is nil")
		}
		return l.AddEventHandler(eh)
	}
	return k
}

// Start attaches the source's handler to the Lister's informers and returns
// at once. Events go to q until ctx ends.
func (k *Kind[T, K]) Start(ctx context.Context, q *queue.Queue[K]) error {
	return k.s.start(ctx, q)
}

// WaitForSync blocks until the handler has been handed every object of the
// type's initial lists, or ctx ends.
func (k *Kind[T, K]) WaitForSync(ctx context.Context) error { return k.s.waitForSync(ctx) }

// String names the source by its Go type and kind, as in
// "source.Kind[*v1.ConfigMap] of v1/ConfigMap".
func (k *Kind[T, K]) String() string { return k.s.name }

// gvkString spells gvk as apiVersion/Kind: "v1/ConfigMap", "apps/v1/Deployment".
func gvkString(gvk schema.GroupVersionKind) string {
	if gvk.Empty() {
		return "an unknown kind"
	}
	return gvk.GroupVersion().String() + "/" + gvk.Kind
}
