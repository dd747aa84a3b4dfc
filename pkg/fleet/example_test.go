package fleet_test

import (
	"fmt"

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

// A fleet controller's queue fair on two levels: across members, then
// across each member's namespaces. The quiet member's key is served
// second, though the other member has three busy namespaces, and those
// namespaces take that member's turns in round.
func ExampleTenantMember() {
	q := queue.New(queue.Options[fleet.Request]{Tenant: fleet.Request.NamespaceTenant, TenantGroup: fleet.TenantMember})
	defer q.ShutDown()
	for i := range 2 {
		for _, ns := range []string{"shop", "mail", "news"} {
			q.Add(fleet.Request{Cluster: "east", Request: reconcile.Request{Namespace: ns, Name: fmt.Sprint("item-", i)}})
		}
	}
	q.Add(fleet.Request{Cluster: "west", Request: reconcile.Request{Namespace: "shop", Name: "item-0"}})
	for range 5 {
		key, _, _ := q.Get()
		fmt.Println(key)
		q.Done(key)
	}
	// Output:
	// east/shop/item-0
	// west/shop/item-0
	// east/mail/item-0
	// east/news/item-0
	// east/shop/item-1
}
