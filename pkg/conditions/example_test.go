package conditions_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/pkg/conditions"
)

// lastTransitionTime follows the status, not the reason; observedGeneration
// follows the object.
func ExampleSetter_Set() {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	s := conditions.Setter{Clock: clk}
	obj := &metav1.ObjectMeta{Name: "ca-bundle", Generation: 1}
	var conds []metav1.Condition
	show := func(changed bool) {
		c := conds[0]
		fmt.Println(changed, c.Status, c.Reason, c.ObservedGeneration, c.LastTransitionTime.Format(time.TimeOnly))
	}

	show(s.Set(&conds, obj, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "SourceNotFound"}))
	clk.SetTime(clk.Now().Add(time.Minute))
	show(s.Set(&conds, obj, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "SourceNotFound"}))
	show(s.Set(&conds, obj, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "SyncFailed"}))
	obj.Generation = 2
	clk.SetTime(clk.Now().Add(time.Minute))
	show(s.Set(&conds, obj, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Synced"}))
	// Output:
	// true False SourceNotFound 1 12:00:00
	// false False SourceNotFound 1 12:00:00
	// true False SyncFailed 1 12:00:00
	// true True Synced 2 12:02:00
}

// ForApply keeps lastTransitionTime while the status stays, as Set does,
// and reads the current conditions without modifying them.
func ExampleSetter_ForApply() {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	s := conditions.Setter{Clock: clk}
	obj := &metav1.ObjectMeta{Name: "ca-bundle", Generation: 2}
	cached := []metav1.Condition{{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Synced", ObservedGeneration: 1,
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC)),
	}}
	show := func(c *metav1ac.ConditionApplyConfiguration) {
		fmt.Println(*c.Status, *c.Reason, *c.ObservedGeneration, c.LastTransitionTime.Format(time.TimeOnly))
	}

	show(s.ForApply(cached, obj, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Synced"}))
	show(s.ForApply(cached, obj, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "SourceNotFound"}))
	fmt.Println(cached[0].ObservedGeneration)
	// Output:
	// True Synced 2 11:00:00
	// False SourceNotFound 2 12:00:00
	// 1
}
