package source

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// errStarted is returned by a second Start of a source.
var errStarted = errors.New("already started: a source may be started once")

// syncPoll is how often WaitForSync asks the handler's registration whether
// it has synced: cache.HandlerRegistration offers no channel to wait on.
const syncPoll = 10 * time.Millisecond

// attachment is a handler's registration with the informers it listens to.
type attachment interface {
	HasSynced() bool
	Remove() error
}

// eventSource is what Kind and Informer share: starting once, attaching the
// event handler, detaching it when the context ends, and waiting for the
// initial list.
//
// On the informer's delivery goroutine an event costs one type assertion,
// the predicates, one key built from the object's namespace and name and
// one queue add, which never blocks and allocates nothing; the source
// allocates nothing per event beyond what client-go does. The package's
// benchmark measures it against controller-runtime's source, handler and
// priority queue.
type eventSource[T cache.Object, K comparable] struct {
	name    string
	typ     string // what it delivers, for HandlerPanic.Type
	handler Handler[T, K]
	preds   []Predicate[T]
	attach  func(toolscache.ResourceEventHandler) (attachment, error)

	mu  sync.Mutex
	att attachment // nil until Start has attached the handler
	// started is set by the first Start, even one that fails.
	started bool
}

func (s *eventSource[T, K]) start(ctx context.Context, q *queue.Queue[K]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.started:
		return fmt.Errorf("start %s: %w", s.name, errStarted)
	case q == nil:
		return fmt.Errorf("start %s: the queue is nil", s.name)
	case s.handler == nil:
		return fmt.Errorf("start %s: the handler is nil", s.name)
	}
	s.started = true
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	h := &eventHandler[T, K]{name: s.name, typ: s.typ, q: q, handler: s.handler, preds: s.preds, onPanic: panicObserver(ctx)}
	if l := lagFrom(ctx); l.Queued != nil || l.Changes {
		h.queued, h.changes, h.epoch = func(float64) {}, l.Changes, time.Now()
		if l.Queued != nil {
			h.queued = l.Queued(s.typ)
		}
	}
	att, err := s.attach(h)
	if err != nil {
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	s.att = att
	context.AfterFunc(ctx, func() {
		h.stopped.Store(true)
		if err := att.Remove(); err != nil {
			utilruntime.HandleError(fmt.Errorf("stop %s: %w", s.name, err))
		}
	})
	return nil
}

func (s *eventSource[T, K]) waitForSync(ctx context.Context) error {
	s.mu.Lock()
	att := s.att
	s.mu.Unlock()
	if att == nil {
		return fmt.Errorf("wait for %s to sync: not started", s.name)
	}
	if att.HasSynced() {
		return nil
	}
	tick := time.NewTicker(syncPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s to sync: %w", s.name, context.Cause(ctx))
		case <-tick.C:
			if att.HasSynced() {
				return nil
			}
		}
	}
}
