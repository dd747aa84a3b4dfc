package fleet_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// A fleet controller's queue keyed on the member: the quiet member's key
// is served second, after the first of the flooding member's hundred.
func ExampleRequest_Tenant() {
	q := queue.New(queue.Options[fleet.Request]{Tenant: fleet.Request.Tenant})
	defer q.ShutDown()
	for i := range 100 {
		q.Add(fleet.Request{Cluster: "east", Request: reconcile.Request{Namespace: "shop", Name: fmt.Sprint("order-", i)}})
	}
	q.Add(fleet.Request{Cluster: "west", Request: reconcile.Request{Namespace: "shop", Name: "order-0"}})
	for range 2 {
		key, _, _ := q.Get()
		fmt.Println(key)
		q.Done(key)
	}
	// Output:
	// east/shop/order-0
	// west/shop/order-0
}

// A member's reachability as a condition, for the status of what stands
// for the member.
func ExampleHealth_Condition() {
	h := fleet.Health{Reachable: false, Since: time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC),
		Err: errors.New(`probe the API server of member cluster "east": connection refused`)}
	c := h.Condition()
	fmt.Println(c.Type, c.Status, c.Reason, c.LastTransitionTime.UTC().Format(time.RFC3339))
	fmt.Println(c.Message)
	// Output:
	// Reachable False Unreachable 2026-11-29T20:00:00Z
	// probe the API server of member cluster "east": connection refused
}
