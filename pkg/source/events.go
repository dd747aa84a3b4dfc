package source

import (
	"fmt"
	"sync/atomic"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/internal/informer"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// eventHandler is the client-go ResourceEventHandler behind Kind and
// Informer: it turns each informer callback into one Event, runs the
// predicates and hands the event to the handler. It allocates nothing of
// its own.
type eventHandler[T cache.Object, K comparable] struct {
	name    string // the source's, for errors
	typ     string // what the source delivers, for HandlerPanic.Type
	q       *queue.Queue[K]
	onPanic func(*HandlerPanic)
	handler Handler[T, K]
	preds   []Predicate[T]
	stopped atomic.Bool // set when the source's context ends

	// queued observes the seconds from delivery to the handler's return,
	// nil unless the source was started under WithLag; changes is
	// Lag.Changes.
	queued  func(seconds float64)
	changes bool
	// epoch is when the source started: the handler dates an event's
	// delivery, when the cache has not, by epoch plus time.Since(epoch),
	// which reads only the monotonic clock, half the cost of time.Now.
	epoch time.Time
}

var (
	_ toolscache.ResourceEventHandler = (*eventHandler[cache.Object, int])(nil)
	_ informer.TimedEventHandler      = (*eventHandler[cache.Object, int])(nil)
	_ informer.Direct                 = (*eventHandler[cache.Object, int])(nil)
)

// DeliverDirectly asks pkg/cache to call the handler on the informer's
// delivery goroutine, right after it stores each event, rather than
// through a buffer and a goroutine of its own: a Handler must not block
// (see Handler), and the hand-offs saved are most of an event's cost.
func (h *eventHandler[T, K]) DeliverDirectly() {}

func (h *eventHandler[T, K]) OnAdd(obj any, isInInitialList bool) {
	h.OnAddAt(obj, isInInitialList, time.Time{}, h.delivered())
}

func (h *eventHandler[T, K]) OnUpdate(oldObj, newObj any) {
	h.OnUpdateAt(oldObj, newObj, time.Time{}, h.delivered())
}

func (h *eventHandler[T, K]) OnDelete(obj any) { h.OnDeleteAt(obj, time.Time{}, h.delivered()) }

// delivered dates the delivery of an event the cache handed without
// times (it keeps no metrics): now, when the handler measures lag, else
// zero.
func (h *eventHandler[T, K]) delivered() time.Time {
	if h.queued == nil {
		return time.Time{}
	}
	return h.epoch.Add(time.Since(h.epoch))
}

// OnAddAt is OnAdd with the change's time and the delivery's, which
// pkg/cache passes when it keeps metrics; it returns the reading of the
// clock that timed it, if it took one (see handle).
func (h *eventHandler[T, K]) OnAddAt(obj any, isInInitialList bool, changed, delivered time.Time) time.Time {
	o, ok := obj.(T)
	if !ok {
		h.unexpected("add", obj)
		return time.Time{}
	}
	return h.handle(Event[T]{Type: Create, Object: o, InInitialList: isInInitialList, Changed: changed}, delivered)
}

// OnUpdateAt is OnUpdate with the change's time and the delivery's.
func (h *eventHandler[T, K]) OnUpdateAt(oldObj, newObj any, changed, delivered time.Time) time.Time {
	o, ok := newObj.(T)
	if !ok {
		h.unexpected("update", newObj)
		return time.Time{}
	}
	old, ok := oldObj.(T)
	if !ok {
		h.unexpected("update", oldObj)
		return time.Time{}
	}
	return h.handle(Event[T]{Type: Update, Object: o, Old: old, Changed: changed}, delivered)
}

// OnDeleteAt is OnDelete with the change's time and the delivery's.
func (h *eventHandler[T, K]) OnDeleteAt(obj any, changed, delivered time.Time) time.Time {
	e := Event[T]{Type: Delete, Changed: changed}
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		e.StateUnknown = true
		obj = tomb.Obj
	}
	o, ok := obj.(T)
	if !ok {
		h.unexpected("delete", obj)
		return time.Time{}
	}
	e.Object = o
	return h.handle(e, delivered)
}

// handle runs the predicates and the handler. A panic in either is
// recovered and reported, and the event is dropped: it must not end the
// informer's delivery goroutine, which would crash the process and every
// controller in it. delivered is when the cache delivered e, or zero if
// e is not to be timed (the cache times a sample of a flood's events).
// Under WithLag, an event the handler handles is timed by one reading of
// the clock as it returns, done, which the cache takes as the delivery
// time of its next event.
func (h *eventHandler[T, K]) handle(e Event[T], delivered time.Time) (done time.Time) {
	if h.stopped.Load() {
		return time.Time{}
	}
	timed := h.queued != nil && !delivered.IsZero()
	if timed {
		e.changes = h.changes
	}
	defer h.recover(&e)
	for _, p := range h.preds {
		if !p(e) {
			return time.Time{}
		}
	}
	h.handler.Handle(e, h.q)
	if !timed {
		return time.Time{}
	}
	took := time.Since(delivered)
	h.queued(took.Seconds())
	return delivered.Add(took)
}

// recover reports a panic of a predicate or handler handed e. It must be
// called by defer directly.
func (h *eventHandler[T, K]) recover(e *Event[T]) {
	r := recover()
	if r == nil {
		return
	}
	h.onPanic(recovered(r, h.name, h.typ, e.Type.String(), e.Object.GetNamespace(), e.Object.GetName()))
}

// unexpected reports an object that is not a T: an Informer source over an
// informer of another type, which is a programming error. It goes where
// client-go reports the errors of its own handlers.
func (h *eventHandler[T, K]) unexpected(event string, obj any) {
	var want T
	utilruntime.HandleError(fmt.Errorf("%s: drop %s event of %T: the source takes %T", h.name, event, obj, want))
}
