package status_test

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/opkit-dev/opkit/pkg/conditions"
	"github.com/opkit-dev/opkit/pkg/status"
)

// A reconciler reports what it found; the status is written only when that
// differs from what the cache holds. controller-runtime's fake client
// stands in for the API server here so that the example runs without one.
func ExamplePatch() {
	ctx := context.Background()
	w := &Widget{ObjectMeta: metav1.ObjectMeta{Name: "ca-bundle", Namespace: "platform", Generation: 1}}
	c := fake.NewClientBuilder().WithScheme(newScheme()).WithObjects(w).WithStatusSubresource(w).Build()
	setter := conditions.Setter{Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))}

	report := func(copies int32) {
		cached := &Widget{} // in a reconciler: from a Lister, unmodified
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), cached); err != nil {
			fmt.Println(err)
			return
		}
		patched, err := status.Patch(ctx, c, cached, func(w *Widget) {
			w.Status.ObservedGeneration = w.Generation
			w.Status.Copies = copies
			setter.Set(&w.Status.Conditions, w, metav1.Condition{
				Type: "Ready", Status: metav1.ConditionTrue, Reason: "Synced", Message: fmt.Sprintf("copied into %d namespaces", copies),
			})
		})
		fmt.Println("patched:", patched, err)
	}
	report(12)
	report(12)
	report(13)
	// Output:
	// patched: true <nil>
	// patched: false <nil>
	// patched: true <nil>
}
