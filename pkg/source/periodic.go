package source

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/opkit-dev/opkit/pkg/queue"
)

// PeriodicOptions configure NewPeriodic. The zero value is valid.
type PeriodicOptions struct {
	// Priority of the queued keys. Defaults to queue.NormalPriority; polls
	// that nobody waits on may use queue.LowPriority.
	Priority int
	// Clock makes the ticker. Defaults to the system clock; tests pass a
	// fake one (k8s.io/utils/clock/testing).
	Clock clock.WithTicker
}

// Periodic is the Source for polling systems that send no events: it calls
// a function once at Start and then every interval, and queues the keys it
// returns. A poll that outlasts the interval delays the next one rather
// than overlapping it.
type Periodic[K comparable] struct {
	interval time.Duration
	keys     func(ctx context.Context) []K
	opts     PeriodicOptions
	started  atomic.Bool
}

var _ Source[int] = (*Periodic[int])(nil)

// NewPeriodic returns the source that queues keys(ctx) every interval. keys
// runs on the source's goroutine with Start's context; it may block for
// I/O, and should return when ctx ends.
func NewPeriodic[K comparable](interval time.Duration, keys func(ctx context.Context) []K, opts PeriodicOptions) *Periodic[K] {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Periodic[K]{interval: interval, keys: keys, opts: opts}
}

// Start starts the polling goroutine and returns at once. The goroutine
// ends when ctx ends.
func (p *Periodic[K]) Start(ctx context.Context, q *queue.Queue[K]) error {
	switch {
	case !p.started.CompareAndSwap(false, true):
		return fmt.Errorf("start %s: %w", p, errStarted)
	case p.interval <= 0:
		return fmt.Errorf("start %s: the interval must be positive", p)
	case p.keys == nil:
		return fmt.Errorf("start %s: the keys function is nil", p)
	case q == nil:
		return fmt.Errorf("start %s: the queue is nil", p)
	}
	// The ticker is made here, not in the goroutine, so that a fake clock
	// stepped after Start returns fires it.
	t := p.opts.Clock.NewTicker(p.interval)
	go p.run(ctx, q, t)
	return nil
}

func (p *Periodic[K]) run(ctx context.Context, q *queue.Queue[K], t clock.Ticker) {
	defer t.Stop()
	opts := queue.AddOpts{Priority: p.opts.Priority}
	for ctx.Err() == nil {
		q.AddWithOpts(opts, p.keys(ctx)...)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// String names the source by its interval.
func (p *Periodic[K]) String() string {
	return fmt.Sprintf("source.Periodic every %s", p.interval)
}
