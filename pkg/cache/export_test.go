package cache

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
