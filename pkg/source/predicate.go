package source

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// Predicate decides which events reach a source's handler.
//
// It is one method over the whole event, rather than one method per event
// type as in controller-runtime, so that a predicate states only what it
// cares about and And, Or and Not compose any predicates without four
// copies of each rule. The change predicates (GenerationChanged and the
// like) let every event other than an update through.
//
// Keep is called on the informer's delivery goroutine: it must be quick and
// must not modify e's objects.
type Predicate[T cache.Object] interface {
	Keep(e Event[T]) bool
}

// PredicateFunc adapts a function to a Predicate.
type PredicateFunc[T cache.Object] func(e Event[T]) bool

var _ Predicate[cache.Object] = PredicateFunc[cache.Object](nil)

// Keep calls f.
func (f PredicateFunc[T]) Keep(e Event[T]) bool { return f(e) }

// GenerationChanged keeps updates that change metadata.generation, which
// the API server raises on spec changes only: status and metadata updates
// are dropped, and so are resyncs. Types with no generation (ConfigMaps,
// Secrets) always have 0, so all their updates are dropped.
func GenerationChanged[T cache.Object]() Predicate[T] {
	return PredicateFunc[T](func(e Event[T]) bool {
		return e.Type != Update || e.Old.GetGeneration() != e.Object.GetGeneration()
	})
}

// ResourceVersionChanged keeps updates that change the object at all: it
// drops resyncs.
func ResourceVersionChanged[T cache.Object]() Predicate[T] {
	return PredicateFunc[T](func(e Event[T]) bool { return !e.Resync() })
}

// LabelsChanged keeps updates that change the object's labels.
func LabelsChanged[T cache.Object]() Predicate[T] {
	return PredicateFunc[T](func(e Event[T]) bool {
		return e.Type != Update || !maps.Equal(e.Old.GetLabels(), e.Object.GetLabels())
	})
}

// AnnotationsChanged keeps updates that change the object's annotations.
func AnnotationsChanged[T cache.Object]() Predicate[T] {
	return PredicateFunc[T](func(e Event[T]) bool {
		return e.Type != Update || !maps.Equal(e.Old.GetAnnotations(), e.Object.GetAnnotations())
	})
}

// LabelSelector keeps events of objects whose labels match sel. An update
// is kept if the old or the new object matches, so that an object whose
// labels stop matching is seen leaving. A nil selector matches nothing.
func LabelSelector[T cache.Object](sel labels.Selector) Predicate[T] {
	if sel == nil {
		sel = labels.Nothing()
	}
	return PredicateFunc[T](func(e Event[T]) bool {
		if sel.Matches(labels.Set(e.Object.GetLabels())) {
			return true
		}
		return e.Type == Update && sel.Matches(labels.Set(e.Old.GetLabels()))
	})
}

// And keeps the events that every one of ps keeps; with none, every event.
func And[T cache.Object](ps ...Predicate[T]) Predicate[T] {
	ps = slices.Clone(ps)
	return PredicateFunc[T](func(e Event[T]) bool {
		for _, p := range ps {
			if !p.Keep(e) {
				return false
			}
		}
		return true
	})
}

// Or keeps the events that at least one of ps keeps; with none, no event.
func Or[T cache.Object](ps ...Predicate[T]) Predicate[T] {
	ps = slices.Clone(ps)
	return PredicateFunc[T](func(e Event[T]) bool {
		for _, p := range ps {
			if p.Keep(e) {
				return true
			}
		}
		return false
	})
}

// Not keeps the events that p drops.
func Not[T cache.Object](p Predicate[T]) Predicate[T] {
	return PredicateFunc[T](func(e Event[T]) bool { return !p.Keep(e) })
}
