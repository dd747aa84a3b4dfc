package consistency

import (
	"sync"
	"sync/atomic"
)

// PerKey holds, per key, the Writes of its last reconcile that the cache
// had not caught up with when the reconcile ended, until the key's next
// reconcile takes them. Its methods are safe for concurrent use.
type PerKey[K comparable] struct {
	mu    sync.Mutex
	byKey map[K]*Writes
	// sweepAt is the size at which Keep drops the entries the cache has
	// caught up with: a key whose writes trigger no reconcile of its own
	// keeps an entry only until then.
	sweepAt int
	// n is len(byKey), for Empty. Keep(key) happens before the next
	// Take(key) of a controller: the queue hands key out again only after
	// the reconcile that kept its writes is done.
	n atomic.Int64
}

// minSweep is the smallest size at which Keep sweeps.
const minSweep = 64

// Empty reports whether no key's writes are kept, without a lock: a key's
// Keep happens before its next reconcile's Take, so Empty is true then only
// if the key has none.
func (p *PerKey[K]) Empty() bool { return p.n.Load() == 0 }

// Take returns and forgets key's Writes, or nil if it has none.
func (p *PerKey[K]) Take(key K) *Writes {
	if p.Empty() {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.byKey[key]
	if ok {
		delete(p.byKey, key)
		p.n.Store(int64(len(p.byKey)))
	}
	return w
}

// Keep keeps w for key's next reconcile, unless the cache has caught up
// with all of it.
func (p *PerKey[K]) Keep(key K, w *Writes) {
	if w == nil || !w.Pending() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	defer func() { p.n.Store(int64(len(p.byKey))) }()
	if p.byKey == nil {
		p.byKey = map[K]*Writes{}
	}
	p.byKey[key] = w
	if len(p.byKey) < max(p.sweepAt, minSweep) {
		return
	}
	for k, kw := range p.byKey {
		if !kw.Pending() {
			delete(p.byKey, k)
		}
	}
	p.sweepAt = 2 * len(p.byKey)
}

// Len returns how many keys have Writes kept.
func (p *PerKey[K]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byKey)
}
