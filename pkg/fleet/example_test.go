package fleet_test

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/rest"

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

// A sharded fleet engages only the members of the slots it holds: before
// it has joined its replicas' group it holds none, so a member a provider
// reports is another replica's, refused at once.
func ExampleShardingOptions() {
	hub := &rest.Config{Host: "https://hub.example"}
	f, err := fleet.New(fleet.Options{Sharding: &fleet.ShardingOptions{
		Config: hub, Namespace: "fleet-system", Group: "copier",
	}})
	if err != nil {
		panic(err)
	}
	if err := f.Engage(context.Background(), fleet.Member{Name: "east", Config: &rest.Config{Host: "https://east.example"}}); err != nil {
		panic(err)
	}
	_, err = f.Cluster("east")
	fmt.Println("runs on every replica:", !f.NeedLeaderElection())
	fmt.Println("east is another replica's:", errors.Is(err, fleet.ErrNotOwned))
	// Output:
	// runs on every replica: true
	// east is another replica's: true
}
