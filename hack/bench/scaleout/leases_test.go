package main

import (
	"context"
	"fmt"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/internal/sharding/membership"
)

// The warm-up waits while the replicas' own loads leave them uneven: a
// plan made before the last of the warm-up's work once left the busiest
// replica 0.225 of the objects against 0.202 of the plan's loads, and 15
// slots moved inside the timed phase. balancePending reads what the
// planner reads, each replica's loads for the slots it claims, and the
// plan the replicas have yet to carry out (6 slots once moved inside the
// timed phase on a plan renewed as the warm-up's slots came to rest),
// and, while the loads are busy, the planner's first plan, which waits
// for a half-life of them.
func TestBalancePending(t *testing.T) {
	const even = "0=1,1=1,2=1,3=1" // a plan the claims carry out
	for i, tc := range []struct {
		name  string
		loads [2]string // the loads of a, holding slots 0 and 1, and of b, holding the rest
		plan  string    // a's plan
		want  bool
	}{
		{"even", [2]string{"0=1,1=1", "2=1,3=1"}, even, false},
		{"within the trigger", [2]string{"0=1,1=1.05", "2=1,3=1"}, even, false},
		{"uneven", [2]string{"0=1,1=1.2", "2=1,3=1"}, even, true},
		{"busy, before the first plan", [2]string{"0=1,1=1", "2=1,3=1"}, "", true},
		{"too idle to balance", [2]string{"0=0.01,1=0.09", "2=0.01,3=0.01"}, "", false},
		{"slots not reported", [2]string{"", "2=1,3=1"}, even, true},
		{"a plan the claims carry out", [2]string{"0=1,1=1", "2=1,3=1"}, even, false},
		{"a plan that swaps slots, not yet carried out", [2]string{"0=1,1=1", "2=1,3=1"}, "0=3,1=3,2=1,3=1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := fmt.Sprintf("pending-%d", i)
			claims := [2]string{"0,1", "2,3," + slotsFrom(4)}
			for j, id := range []string{"a", "b"} {
				l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: group + "-" + id, Namespace: leaseNamespace,
					Labels:      map[string]string{membership.LabelGroup: group},
					Annotations: map[string]string{membership.AnnotationClaims: claims[j], membership.AnnotationLoad: tc.loads[j]}}}
				if j == 0 && tc.plan != "" {
					l.Annotations[membership.AnnotationPlan] = tc.plan
				}
				if _, err := env.Client().CoordinationV1().Leases(leaseNamespace).Create(t.Context(), l, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					_ = env.Client().CoordinationV1().Leases(leaseNamespace).Delete(context.Background(), l.Name, metav1.DeleteOptions{})
				})
			}
			got, err := balancePending(t.Context(), env.Client(), group)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("balancePending = %v, want %v", got, tc.want)
			}
		})
	}
}

// slotsFrom returns the slots from first to the last, joined by commas.
func slotsFrom(first int) string {
	out := ""
	for s := first; s < slots; s++ {
		if out != "" {
			out += ","
		}
		out += fmt.Sprint(s)
	}
	return out
}
