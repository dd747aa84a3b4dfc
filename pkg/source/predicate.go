package source

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// Predicate decides which events reach a source's handler: it reports
// whether to keep e.
//
// It is a function over the whole event, rather than an interface of one
// method per event type as in controller-runtime, so that a predicate
// states only what it cares about, And, Or and Not compose any predicates
// without four copies of each rule, and a plain function such as
// GenerationChanged passes for any T without a type argument:
// manager.For(&r.websites, source.GenerationChanged) infers T from the
// Lister. The change predicates (GenerationChanged and the like) let every
// event other than an update through.
//
// A Predicate is called on the informer's delivery goroutine: it must be
// quick and must not modify e's objects.
type Predicate[T cache.Object] func(e Event[T]) bool

// GenerationChanged keeps updates that change metadata.generation. The API
// server raises the generation when the spec changes and when the
// deletion of an object held by a finalizer starts (deletionTimestamp
// set); not when only the status or other metadata change (labels,
// annotations, finalizers). So status and metadata updates are dropped,
// and so are resyncs, while the update that starts a deletion is kept.
// Types with no generation (ConfigMaps, Secrets) always have 0, so all
// their updates are dropped.
func GenerationChanged[T cache.Object](e Event[T]) bool {
	return e.Type != Update || e.Old.GetGeneration() != e.Object.GetGeneration()
}

// ResourceVersionChanged keeps updates that change the object at all: it
// drops resyncs.
func ResourceVersionChanged[T cache.Object](e Event[T]) bool { return !e.Resync() }

// LabelsChanged keeps updates that change the object's labels.
func LabelsChanged[T cache.Object](e Event[T]) bool {
	return e.Type != Update || !maps.Equal(e.Old.GetLabels(), e.Object.GetLabels())
}

// AnnotationsChanged keeps updates that change the object's annotations.
func AnnotationsChanged[T cache.Object](e Event[T]) bool {
	return e.Type != Update || !maps.Equal(e.Old.GetAnnotations(), e.Object.GetAnnotations())
}

// LabelSelector keeps events of objects whose labels match sel. An update
// is kept if the old or the new object matches, so that an object whose
// labels stop matching is seen leaving. A nil selector matches nothing.
// It takes the object type as a type argument, since sel does not name
// it: source.LabelSelector[*corev1.Secret](sel).
func LabelSelector[T cache.Object](sel labels.Selector) Predicate[T] {
	if sel == nil {
		sel = labels.Nothing()
	}
	return func(e Event[T]) bool {
		if sel.Matches(labels.Set(e.Object.GetLabels())) {
			return true
		}
		return e.Type == Update && sel.Matches(labels.Set(e.Old.GetLabels()))
	}
}

// And keeps the events that every one of ps keeps; with none, every event.
func And[T cache.Object](ps ...Predicate[T]) Predicate[T] {
	ps = slices.Clone(ps)
	return func(e Event[T]) bool {
		for _, p := range ps {
			if !p(e) {
				return false
			}
		}
		return true
	}
}

// Or keeps the events that at least one of ps keeps; with none, no event.
func Or[T cache.Object](ps ...Predicate[T]) Predicate[T] {
	ps = slices.Clone(ps)
	return func(e Event[T]) bool {
		for _, p := range ps {
			if p(e) {
				return true
			}
		}
		return false
	}
}

// Not keeps the events that p drops.
func Not[T cache.Object](p Predicate[T]) Predicate[T] {
	return func(e Event[T]) bool { return !p(e) }
}
