package source

import (
	"context"

	"github.com/opkit-dev/opkit/pkg/queue"
)

// Source puts keys on a queue.
type Source[K comparable] interface {
	// Start begins putting keys on q and returns at once, without waiting
	// for any event; it stops when ctx ends. It returns an error only if
	// the source cannot start (for example a type not registered with the
	// cache). A Source may be started once.
	Start(ctx context.Context, q *queue.Queue[K]) error
}

// Syncing is implemented by a Source that has an initial set of keys to
// deliver, such as Kind's initial list.
type Syncing interface {
	// WaitForSync blocks until the source has put every key of its initial
	// set on the queue, or ctx ends; then it returns an error that names
	// the source and wraps context.Cause(ctx).
	WaitForSync(ctx context.Context) error
}
