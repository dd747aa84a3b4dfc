package source

import (
	"fmt"
	"sync/atomic"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// eventHandler is the client-go ResourceEventHandler behind Kind and
// Informer: it turns each informer callback into one Event, runs the
// predicates and hands the event to the handler. It allocates nothing of
// its own.
type eventHandler[T cache.Object, K comparable] struct {
	name    string // the source's, for errors
	q       *queue.Queue[K]
	handler Handler[T, K]
	preds   []Predicate[T]
	stopped atomic.Bool // set when the source's context ends
}

var _ toolscache.ResourceEventHandler = (*eventHandler[cache.Object, int])(nil)

func (h *eventHandler[T, K]) OnAdd(obj any, isInInitialList bool) {
	o, ok := obj.(T)
	if !ok {
		h.unexpected("add", obj)
		return
	}
	h.handle(Event[T]{Type: Create, Object: o, InInitialList: isInInitialList})
}

func (h *eventHandler[T, K]) OnUpdate(oldObj, newObj any) {
	o, ok := newObj.(T)
	if !ok {
		h.unexpected("update", newObj)
		return
	}
	old, ok := oldObj.(T)
	if !ok {
		h.unexpected("update", oldObj)
		return
	}
	h.handle(Event[T]{Type: Update, Object: o, Old: old})
}

func (h *eventHandler[T, K]) OnDelete(obj any) {
	e := Event[T]{Type: Delete}
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		e.StateUnknown = true
		obj = tomb.Obj
	}
	o, ok := obj.(T)
	if !ok {
		h.unexpected("delete", obj)
		return
	}
	e.Object = o
	h.handle(e)
}

func (h *eventHandler[T, K]) handle(e Event[T]) {
	if h.stopped.Load() {
		return
	}
	for _, p := range h.preds {
		if !p.Keep(e) {
			return
		}
	}
	h.handler.Handle(e, h.q)
}

// unexpected reports an object that is not a T: an Informer source over an
// informer of another type, which is a programming error. It goes where
// client-go reports the errors of its own handlers.
func (h *eventHandler[T, K]) unexpected(event string, obj any) {
	var want T
	utilruntime.HandleError(fmt.Errorf("%s: drop %s event of %T: the source takes %T", h.name, event, obj, want))
}
