package cache

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// ingestTransform strips what opts say to strip, runs next, and then
// shares what the object has in common with others through c. It is an
// informer's transform: it runs once per object, before the object is
// stored or handed to any handler, on an object nothing else holds yet,
// or that it transformed before (a watch-list's objects pass twice), which
// it leaves as it is.
func ingestTransform(opts TypeOptions, next toolscache.TransformFunc, c *compactor) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		// Tombstones (DeletedFinalStateUnknown) and anything else without
		// object metadata pass through.
		if m, err := meta.Accessor(obj); err == nil {
			// Written only when there is something to strip: a
			// watch-list transforms each object twice (client-go's
			// RealFIFO.Replace after the reflector's temporary store),
			// and the second pass must not write what others may read.
			if !opts.KeepManagedFields && len(m.GetManagedFields()) > 0 {
				m.SetManagedFields(nil)
			}
			if !opts.KeepLastApplied {
				dropLastApplied(m)
			}
		}
		if next != nil {
			var err error
			if obj, err = next(obj); err != nil {
				return nil, err
			}
		}
		c.compact(obj)
		return obj, nil
	}
}

func dropLastApplied(m interface {
	GetAnnotations() map[string]string
	SetAnnotations(map[string]string)
}) {
	a := m.GetAnnotations()
	if _, ok := a[lastAppliedAnnotation]; !ok {
		return
	}
	if len(a) == 1 {
		m.SetAnnotations(nil)
		return
	}
	// Unstructured objects hand out a copy; typed ones their own map, which
	// was decoded for this object alone. Either way, set it back.
	a = maps.Clone(a)
	delete(a, lastAppliedAnnotation)
	m.SetAnnotations(a)
}
