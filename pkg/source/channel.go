package source

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/opkit-dev/opkit/pkg/queue"
)

// Channel is the Source of events from outside Kubernetes: it reads a Go
// channel until the channel closes or the context passed to Start ends, and
// queues the keys of each value at queue.NormalPriority.
//
// Its goroutine never blocks on the queue, so a sender blocks only while
// the channel's buffer is full and the reader is between receives.
type Channel[E any, K comparable] struct {
	ch      <-chan E
	key     func(E) K   // set by NewChannel
	keys    func(E) []K // set by MapChannel
	started atomic.Bool
}

var _ Source[int] = (*Channel[int, int])(nil)

// NewChannel returns the source that queues every key received from ch.
func NewChannel[K comparable](ch <-chan K) *Channel[K, K] {
	return &Channel[K, K]{ch: ch, key: func(k K) K { return k }}
}

// MapChannel returns the source that queues the keys fn returns for every
// event received from ch.
func MapChannel[E any, K comparable](ch <-chan E, fn func(E) []K) *Channel[E, K] {
	return &Channel[E, K]{ch: ch, keys: fn}
}

// Start starts the goroutine that reads the channel and returns at once.
// The goroutine ends when the channel closes or ctx ends.
func (c *Channel[E, K]) Start(ctx context.Context, q *queue.Queue[K]) error {
	switch {
	case !c.started.CompareAndSwap(false, true):
		return fmt.Errorf("start %s: %w", c, errStarted)
	case c.ch == nil:
		return fmt.Errorf("start %s: the channel is nil", c)
	case c.key == nil && c.keys == nil:
		return fmt.Errorf("start %s: the map function is nil", c)
	case q == nil:
		return fmt.Errorf("start %s: the queue is nil", c)
	}
	go c.run(ctx, q, panicObserver(ctx))
	return nil
}

func (c *Channel[E, K]) run(ctx context.Context, q *queue.Queue[K], onPanic func(*HandlerPanic)) {
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-c.ch:
			if !ok {
				return
			}
			c.queue(q, e, onPanic)
		}
	}
}

// queue queues the keys of e. A panic of the map function is recovered
// and reported, and e dropped, so that the channel is read on.
func (c *Channel[E, K]) queue(q *queue.Queue[K], e E, onPanic func(*HandlerPanic)) {
	defer func() {
		if r := recover(); r != nil {
			onPanic(recovered(r, c.String(), reflect.TypeFor[E]().String(), "receive", "", ""))
		}
	}()
	if c.key != nil {
		q.Add(c.key(e))
		return
	}
	q.AddWithOpts(queue.AddOpts{}, c.keys(e)...)
}

// String names the source by its element type.
func (c *Channel[E, K]) String() string {
	return fmt.Sprintf("source.Channel[%v]", reflect.TypeFor[E]())
}
