package cache

import (
	"maps"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
)

// ingestTransform sets the kind of a typed object (k, nil for the other
// forms), strips what opts say to strip, runs next, and then shares what
// the object has in common with others through c. It is an informer's
// transform: it runs once per object, before the object is stored or
// handed to any handler, on an object nothing else holds yet, or that it
// transformed before (a watch-list's objects pass twice), which it leaves
// as it is.
func ingestTransform(opts TypeOptions, next toolscache.TransformFunc, c *compactor, k *kindStamp) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		// Before next, so that a Transform sees the kind too.
		k.stamp(obj)
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
			k.stamp(obj) // in case next made a new object
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

// kindStamp sets the apiVersion and kind of a typed object, which the
// informer's decoder leaves empty (client-go decodes into Go types
// without them), so that every object a Lister returns or a handler is
// handed says its kind, as controller-runtime's cached client's do. Every
// object of an informer points at the stamp's two strings: stamping adds
// no allocation and no bytes per object, only writes into the TypeMeta
// every typed object has.
type kindStamp struct{ apiVersion, kind string }

// newKindStamp returns the stamp of gvk.
func newKindStamp(gvk schema.GroupVersionKind) *kindStamp {
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	return &kindStamp{apiVersion: apiVersion, kind: kind}
}

// stamp sets obj's apiVersion and kind, writing only a field that holds
// another string: a second pass over obj, while others may read it,
// writes nothing. A nil stamp, and an object without a TypeMeta
// (a tombstone), are left as they are.
func (k *kindStamp) stamp(obj any) {
	if k == nil {
		return
	}
	o, ok := obj.(runtime.Object)
	if !ok {
		return
	}
	tm, ok := o.GetObjectKind().(*metav1.TypeMeta)
	if !ok {
		return
	}
	if unsafe.StringData(tm.APIVersion) != unsafe.StringData(k.apiVersion) {
		tm.APIVersion = k.apiVersion
	}
	if unsafe.StringData(tm.Kind) != unsafe.StringData(k.kind) {
		tm.Kind = k.kind
	}
}

// kindStamp returns the stamp of a typed registration's kind, for one of
// its informers; nil for the other forms, whose objects carry their kind
// already (the metadata client's are stamped as they are listed and
// watched; unstructured ones keep what the API server sent).
func (r *registration) kindStamp() *kindStamp {
	if r.key.form != typed {
		return nil
	}
	return newKindStamp(r.key.gvk)
}
