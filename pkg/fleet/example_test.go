package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/manager"
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

// A fleet reconciler that labels each ConfigMap as the ServiceAccount
// "deployer" of its namespace in the ConfigMap's member: that member's API
// server decides, by its own RBAC, whether the ServiceAccount may, and
// a patch that would change nothing is not sent.
func ExampleCluster_WriterAs() {
	f, err := fleet.New(fleet.Options{})
	if err != nil {
		panic(err)
	}
	configMaps, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		panic(err)
	}
	r := reconcile.Func[fleet.Request](func(ctx context.Context, req fleet.Request) (reconcile.Result, error) {
		l, err := configMaps.In(req.Cluster)
		if err != nil {
			return reconcile.Done(), err
		}
		cm, err := l.Get(req.Namespace, req.Name)
		if err != nil {
			return reconcile.Done(), client.IgnoreNotFound(err)
		}
		cp := cm.DeepCopy() // cached objects are shared: never modify them
		cp.Labels = labels.Merge(cp.Labels, labels.Set{"example.com/member": req.Cluster})
		as := fleet.ClusterFrom(ctx).WriterAs("labeller", manager.ServiceAccount(req.Namespace, "deployer"))
		return reconcile.Done(), as.Patch(ctx, cp, client.MergeFrom(cm))
	})
	_ = fleet.Reconciler(f, r) // a controller.New[fleet.Request]'s reconciler
}

// The path member eu-1's webhook configuration names for the ConfigMap
// validator that RegisterWebhooks serves.
func ExampleMemberPath() {
	fmt.Println(fleet.MemberPath("eu-1", webhook.ValidatePath(corev1.SchemeGroupVersion.WithKind("ConfigMap"))))
	// Output:
	// /members/eu-1/validate--v1-configmap
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
