package cache

// Namespaced reports whether T's objects live in namespaces, as the API
// server serves the type. It is known once the type's informers exist:
// before Start, while its CRD is not installed and after Remove it returns
// the error a read would (wrapping ErrNotSynced, ErrNotInstalled or
// ErrRemoved). It costs an atomic load, so a handler may ask on every event.
func (l *Lister[T]) Namespaced() (bool, error) {
	v, err := l.reg.readable()
	if err != nil {
		return false, err
	}
	return v.namespaced, nil
}
