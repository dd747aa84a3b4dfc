package informer

import (
	"fmt"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"
)

// buffer hands a handler that may block its events on a goroutine of its
// own, from a queue that grows as far as the handler falls behind, as
// client-go's processorListener does. Its push side is the
// ResourceEventHandler, and TimedEventHandler, the informer calls; it is
// the handler's DoneChecker too.
type buffer struct {
	handler  toolscache.ResourceEventHandler
	timed    TimedEventHandler      // handler, if it is one
	lag      *Lag                   // the informer's
	upstream toolscache.DoneChecker // the informer's sync

	mu      sync.Mutex
	queue   []event // queue[head:] is pending
	head    int
	initial int // pending adds of an initial list, or of the store's objects
	stopped bool
	wake    chan struct{} // cap 1: something was pushed, or stopped
	synced  chan struct{} // closed once upstream is done and initial is 0
	closed  bool          // synced is closed
}

var _ TimedEventHandler = (*buffer)(nil)

// minBuffer is the room a drained buffer keeps, in events.
const minBuffer = 64

func newBuffer(h toolscache.ResourceEventHandler, lag *Lag, upstream toolscache.DoneChecker) *buffer {
	b := &buffer{handler: h, lag: lag, upstream: upstream, wake: make(chan struct{}, 1), synced: make(chan struct{})}
	b.timed, _ = h.(TimedEventHandler)
	return b
}

func (b *buffer) OnAdd(obj any, isInInitialList bool) {
	b.push(event{kind: 'a', obj: obj, isInInitialList: isInInitialList})
}

func (b *buffer) OnUpdate(oldObj, newObj any) {
	b.push(event{kind: 'u', obj: newObj, old: oldObj})
}

func (b *buffer) OnDelete(obj any) { b.push(event{kind: 'd', obj: obj}) }

// The Timed methods keep an event's date; the handler is handed it with
// the time of its own delivery, or with zero times if the event is not in
// the informer's sample (delivered is zero).

func (b *buffer) OnAddAt(obj any, isInInitialList bool, changed, delivered time.Time) time.Time {
	b.push(event{kind: 'a', obj: obj, isInInitialList: isInInitialList, changed: changed, untimed: delivered.IsZero()})
	return time.Time{}
}

func (b *buffer) OnUpdateAt(oldObj, newObj any, changed, delivered time.Time) time.Time {
	b.push(event{kind: 'u', obj: newObj, old: oldObj, changed: changed, untimed: delivered.IsZero()})
	return time.Time{}
}

func (b *buffer) OnDeleteAt(obj any, changed, delivered time.Time) time.Time {
	b.push(event{kind: 'd', obj: obj, changed: changed, untimed: delivered.IsZero()})
	return time.Time{}
}

func (b *buffer) push(n event) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	if b.head > 0 && len(b.queue) == cap(b.queue) {
		// Reuse the room of what was handed on before growing.
		n := copy(b.queue, b.queue[b.head:])
		clear(b.queue[n:])
		b.queue, b.head = b.queue[:n], 0
	}
	b.queue = append(b.queue, n)
	if n.isInInitialList {
		b.initial++
	}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// stop hands the handler nothing more. The caller holds the informer's mu.
func (b *buffer) stop() {
	b.mu.Lock()
	b.stopped = true
	b.queue, b.head = nil, 0
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// run hands the queue to the handler until stopped. A panic of the
// handler is reported as client-go reports one of its handlers', which by
// default ends the process.
func (b *buffer) run() {
	defer utilruntime.HandleCrash()
	upstream := b.upstream.Done()
	for {
		n, ok, stopped := b.next()
		if stopped {
			return
		}
		if !ok {
			select {
			case <-b.wake:
			case <-upstream:
				upstream = nil
			}
			continue
		}
		b.lag.deliver(&n, b.handler, b.timed)
		if n.isInInitialList {
			b.mu.Lock()
			b.initial--
			b.mu.Unlock()
		}
	}
}

// next takes the oldest pending notification, and marks the handler
// synced once it has been handed its initial list.
func (b *buffer) next() (n event, ok, stopped bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return n, false, true
	}
	if !b.closed && b.initial == 0 && toolscache.IsDone(b.upstream) {
		b.closed = true
		close(b.synced)
	}
	if b.head == len(b.queue) {
		if cap(b.queue) > minBuffer {
			// Drained: let a backlog's room go, which would otherwise
			// stay as large as the largest backlog, an initial list's.
			b.queue, b.head = nil, 0
		}
		return n, false, false
	}
	n = b.queue[b.head]
	b.queue[b.head] = event{} // let the objects go
	b.head++
	return n, true, false
}

func (b *buffer) hasSynced() bool { return toolscache.IsDone(b) }

// Name is the handler's, for DoneChecker.
func (b *buffer) Name() string { return fmt.Sprintf("event handler %T", b.handler) }

// Done is closed once the handler has been handed the informer's initial
// list.
func (b *buffer) Done() <-chan struct{} { return b.synced }
