package source

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// Informer is the Source of a client-go SharedIndexInformer that the caller
// owns and runs, for informers made outside pkg/cache. Objects that are not
// a T are dropped and reported through client-go's
// k8s.io/apimachinery/pkg/util/runtime.HandleError.
type Informer[T cache.Object, K comparable] struct {
	s eventSource[T, K]
}

var (
	_ Source[int] = (*Informer[cache.Object, int])(nil)
	_ Syncing     = (*Informer[cache.Object, int])(nil)
)

// NewInformer returns the source of inf's events, queued by h and kept if
// every one of preds keeps them. The source does not run inf.
func NewInformer[T cache.Object, K comparable](inf toolscache.SharedIndexInformer, h Handler[T, K], preds ...Predicate[T]) *Informer[T, K] {
	i := &Informer[T, K]{s: eventSource[T, K]{handler: h, preds: slices.Clone(preds)}}
	i.s.typ = reflect.TypeFor[T]().String()
	i.s.name = fmt.Sprintf("source.Informer[%v] %p", reflect.TypeFor[T](), inf)
	i.s.attach = func(eh toolscache.ResourceEventHandler) (attachment, error) {
		if inf == nil {
			return nil, fmt.Errorf("the informer is nil")
		}
		reg, err := inf.AddEventHandler(eh)
		if err != nil {
			return nil, fmt.Errorf("add event handler: %w", err)
		}
		return informerAttachment{inf, reg}, nil
	}
	return i
}

// Start adds the source's handler to the informer and returns at once.
// Events go to q until ctx ends.
func (i *Informer[T, K]) Start(ctx context.Context, q *queue.Queue[K]) error {
	return i.s.start(ctx, q)
}

// WaitForSync blocks until the informer has synced and the handler has been
// handed every object of its initial list, or ctx ends.
func (i *Informer[T, K]) WaitForSync(ctx context.Context) error { return i.s.waitForSync(ctx) }

// String names the source by its Go type and informer.
func (i *Informer[T, K]) String() string { return i.s.name }

type informerAttachment struct {
	inf toolscache.SharedIndexInformer
	reg toolscache.ResourceEventHandlerRegistration
}

func (a informerAttachment) HasSynced() bool { return a.reg.HasSynced() }
func (a informerAttachment) Remove() error   { return a.inf.RemoveEventHandler(a.reg) }
