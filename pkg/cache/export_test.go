package cache

// Remove stops l's type whoever holds it (Lister.remove).
func Remove[T Object](l *Lister[T]) { l.remove() }

// Lookup returns the Lister of the one typed registration of T (lookup).
func Lookup[T Object](c *Cache) (*Lister[T], error) { return lookup[T](c) }

// LazyJoined returns how many Gets wait for the fetch of namespace/name
// under way besides the one that runs it; -1 when none is under way.
func LazyJoined[T Object](l *LazyLister[T], namespace, name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.inflight[lazyKey{namespace, name}]; ok {
		return f.joined
	}
	return -1
}

// SetSeedPageSize sets the page size of the lists of gained slots until
// the test ends.
func SetSeedPageSize(t interface{ Cleanup(func()) }, n int64) {
	old := seedPageSize
	seedPageSize = n
	t.Cleanup(func() { seedPageSize = old })
}
