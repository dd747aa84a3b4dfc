package conditions

import (
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
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

// ForApply returns cond as Set would record it in conds, as an apply
// configuration for a server-side apply of obj's status: the
// ObservedGeneration of obj, and the LastTransitionTime of cond's type in
// conds kept unless the status changes. conds is only read, so it may be
// the conditions of a cached object.
func (s Setter) ForApply(conds []metav1.Condition, obj metav1.Object, cond metav1.Condition) *metav1ac.ConditionApplyConfiguration {
	var one []metav1.Condition
	if old := apimeta.FindStatusCondition(conds, cond.Type); old != nil {
		one = append(one, *old)
	}
	s.Set(&one, obj, cond)
	c := one[0]
	return metav1ac.Condition().WithType(c.Type).WithStatus(c.Status).
		WithObservedGeneration(c.ObservedGeneration).WithLastTransitionTime(c.LastTransitionTime).
		WithReason(c.Reason).WithMessage(c.Message)
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

// ForApply is Setter.ForApply with the real clock.
func ForApply(conds []metav1.Condition, obj metav1.Object, cond metav1.Condition) *metav1ac.ConditionApplyConfiguration {
	return Setter{}.ForApply(conds, obj, cond)
}
