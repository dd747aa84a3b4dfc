package consistency

import (
	"context"
	"sync"
)

// A Write is one write the cache is to catch up with: cacheaccess.Write
// is one.
type Write interface {
	// CaughtUp reports, without blocking, whether the cache has caught up.
	CaughtUp() bool
	// Wait blocks until the cache has caught up, or ctx ends (then it
	// returns ctx's error).
	Wait(ctx context.Context) error
}

// Writes are the writes of one key's reconciles that its next reconcile
// waits for the cache to catch up with. The controller makes one per
// reconcile and puts it in the reconcile's context (NewContext); a client
// made by NewClient adds to it. Its methods are safe for concurrent use.
type Writes struct {
	mu      sync.Mutex
	written []Write
}

// ContextKey is the key under which a context carries its *Writes: the
// writes made through a client of NewClient with that context are added to
// them. The controller's reconcile contexts answer it from their own Value
// method, so that a reconcile's values take one allocation, not one each.
type ContextKey struct{}

// FromContext returns the Writes ctx carries, or nil outside a reconcile
// (or in a controller with read-your-writes turned off).
func FromContext(ctx context.Context) *Writes {
	w, _ := ctx.Value(ContextKey{}).(*Writes)
	return w
}

// Add records a write. Use it for writes made by a client that NewClient
// does not wrap; a Write that has caught up already is not kept.
func (w *Writes) Add(x Write) {
	if x.CaughtUp() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.written = append(w.written, x)
}

// Pending drops the writes the cache has caught up with and reports
// whether any is left.
func (w *Writes) Pending() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	kept := w.written[:0]
	for _, x := range w.written {
		if !x.CaughtUp() {
			kept = append(kept, x)
		}
	}
	clear(w.written[len(kept):])
	w.written = kept
	return len(kept) > 0
}

// Wait blocks until the cache has caught up with every write, or ctx ends
// (then it returns ctx's error).
func (w *Writes) Wait(ctx context.Context) error {
	w.mu.Lock()
	written := append([]Write(nil), w.written...)
	w.mu.Unlock()
	for _, x := range written {
		if err := x.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}
