package fleet_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/webhook"
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

// The path member eu-1's webhook configuration names for the ConfigMap
// validator that RegisterWebhooks serves.
func ExampleMemberPath() {
	fmt.Println(fleet.MemberPath("eu-1", webhook.ValidatePath(corev1.SchemeGroupVersion.WithKind("ConfigMap"))))
	// Output:
	// /members/eu-1/validate--v1-configmap
}
