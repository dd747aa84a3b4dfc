package conditions

import (
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// Setter sets conditions with the time of its Clock. The zero value is
// ready to use; it is safe for concurrent use if its Clock is.
type Setter struct {
	// Clock gives lastTransitionTime. Defaults to the real clock.
	Clock clock.PassiveClock
}

// Set records cond in *conds as the condition of its type, with
// ObservedGeneration set to obj's generation and LastTransitionTime set to
// now if the condition is new or its status changed, and kept otherwise. It
// reports whether *conds changed. conds must not be nil; obj is only read.
// apimachinery's meta.SetStatusCondition does the merge; Set adds the
// clock and the generation, and nothing else.
func (s Setter) Set(conds *[]metav1.Condition, obj metav1.Object, cond metav1.Condition) (changed bool) {
	cond.ObservedGeneration = obj.GetGeneration()
	cond.LastTransitionTime = metav1.NewTime(s.now()).Rfc3339Copy()
	return apimeta.SetStatusCondition(conds, cond)
}

func (s Setter) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}

// Set is Setter.Set with the real clock.
func Set(conds *[]metav1.Condition, obj metav1.Object, cond metav1.Condition) (changed bool) {
	return Setter{}.Set(conds, obj, cond)
}
