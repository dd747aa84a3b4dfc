package consistency

import "sync"

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
}

// minSweep is the smallest size at which Keep sweeps.
const minSweep = 64

// Take returns and forgets key's Writes, or nil if it has none.
func (p *PerKey[K]) Take(key K) *Writes {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.byKey[key]
	delete(p.byKey, key)
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
