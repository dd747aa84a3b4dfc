package conditions_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/pkg/conditions"
)

func TestSet(t *testing.T) {
	earlier := metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := time.Date(2026, 6, 7, 8, 9, 10, 123456789, time.UTC)
	nowSeconds := metav1.NewTime(now.Truncate(time.Second))
	ready := func(status metav1.ConditionStatus, reason string, gen int64, ltt metav1.Time) metav1.Condition {
		return metav1.Condition{Type: "Ready", Status: status, Reason: reason, Message: reason + " message", ObservedGeneration: gen, LastTransitionTime: ltt}
	}
	other := metav1.Condition{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "Fine", ObservedGeneration: 1, LastTransitionTime: earlier}
	tests := []struct {
		name        string
		have        []metav1.Condition
		set         metav1.Condition
		want        []metav1.Condition
		wantChanged bool
	}{{
		name:        "new",
		set:         ready(metav1.ConditionTrue, "Synced", 0, metav1.Time{}),
		want:        []metav1.Condition{ready(metav1.ConditionTrue, "Synced", 3, nowSeconds)},
		wantChanged: true,
	}, {
		name:        "new among others",
		have:        []metav1.Condition{other},
		set:         ready(metav1.ConditionTrue, "Synced", 0, metav1.Time{}),
		want:        []metav1.Condition{other, ready(metav1.ConditionTrue, "Synced", 3, nowSeconds)},
		wantChanged: true,
	}, {
		name:        "status changes",
		have:        []metav1.Condition{ready(metav1.ConditionTrue, "Synced", 3, earlier)},
		set:         ready(metav1.ConditionFalse, "SyncFailed", 0, metav1.Time{}),
		want:        []metav1.Condition{ready(metav1.ConditionFalse, "SyncFailed", 3, nowSeconds)},
		wantChanged: true,
	}, {
		name:        "reason changes, status does not",
		have:        []metav1.Condition{ready(metav1.ConditionFalse, "SyncFailed", 3, earlier)},
		set:         ready(metav1.ConditionFalse, "Conflict", 0, metav1.Time{}),
		want:        []metav1.Condition{ready(metav1.ConditionFalse, "Conflict", 3, earlier)},
		wantChanged: true,
	}, {
		name:        "generation changes, status does not",
		have:        []metav1.Condition{ready(metav1.ConditionTrue, "Synced", 2, earlier)},
		set:         ready(metav1.ConditionTrue, "Synced", 0, metav1.Time{}),
		want:        []metav1.Condition{ready(metav1.ConditionTrue, "Synced", 3, earlier)},
		wantChanged: true,
	}, {
		name:        "nothing changes",
		have:        []metav1.Condition{other, ready(metav1.ConditionTrue, "Synced", 3, earlier)},
		set:         ready(metav1.ConditionTrue, "Synced", 0, metav1.Time{}),
		want:        []metav1.Condition{other, ready(metav1.ConditionTrue, "Synced", 3, earlier)},
		wantChanged: false,
	}, {
		name:        "the caller's generation and time are ignored",
		have:        []metav1.Condition{ready(metav1.ConditionTrue, "Synced", 3, earlier)},
		set:         ready(metav1.ConditionUnknown, "Checking", 7, metav1.NewTime(now.Add(time.Hour))),
		want:        []metav1.Condition{ready(metav1.ConditionUnknown, "Checking", 3, nowSeconds)},
		wantChanged: true,
	}}
	obj := &metav1.ObjectMeta{Name: "m", Generation: 3}
	s := conditions.Setter{Clock: clocktesting.NewFakePassiveClock(now)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), tt.have...)
			changed := s.Set(&conds, obj, tt.set)
			if changed != tt.wantChanged {
				t.Errorf("Set reported changed=%v, want %v", changed, tt.wantChanged)
			}
			if d := cmp.Diff(tt.want, conds); d != "" {
				t.Errorf("conditions (-want +got):\n%s", d)
			}
		})
	}
}

// The package-level Set reads the real clock: a new condition's time is
// between the times read around the call, in whole seconds.
func TestSetRealClock(t *testing.T) {
	var conds []metav1.Condition
	before := time.Now().Truncate(time.Second)
	conditions.Set(&conds, &metav1.ObjectMeta{Generation: 1}, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Synced"})
	after := time.Now()
	got := conds[0].LastTransitionTime.Time
	if got.Before(before) || got.After(after) || got.Nanosecond() != 0 {
		t.Errorf("lastTransitionTime %v, want whole seconds in [%v, %v]", got, before, after)
	}
}
