package source_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// A handler and a predicate need no informer: hand them events as a source
// would. The resync queues web-config at low priority (-100); the live
// update raises it to normal (0); db-config is dropped.
func Example() {
	q := queue.New[reconcile.Request](queue.Options[reconcile.Request]{})
	defer q.ShutDown()

	keep := source.LabelSelector[*corev1.ConfigMap](labels.SelectorFromSet(labels.Set{"app": "web"}))
	handler := source.EnqueueObject[*corev1.ConfigMap]()

	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: "web-config", ResourceVersion: "7", Labels: map[string]string{"app": "web"}}}
	changed := old.DeepCopy()
	changed.ResourceVersion = "8"
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-config"}}

	for _, e := range []source.Event[*corev1.ConfigMap]{
		{Type: source.Update, Old: old, Object: old},     // a resync
		{Type: source.Update, Old: old, Object: changed}, // a live update
		{Type: source.Create, Object: other},             // dropped by the predicate
	} {
		if keep(e) {
			handler.Handle(e, q)
		}
	}
	for q.Len() > 0 {
		key, priority, _ := q.Get()
		fmt.Println(key, priority)
		q.Done(key)
	}
	// Output:
	// shop/web-config 0
}

// A Kind source queues the keys of a cached type's events. The controller
// starts it, then waits for it to sync.
func ExampleNewKind() {
	var c *cache.Cache // from the manager, or cache.New
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	src := source.NewKind(cms, source.EnqueueObject[*corev1.ConfigMap](),
		source.ResourceVersionChanged) // no resyncs
	ctx := context.TODO()
	q := queue.New[reconcile.Request](queue.Options[reconcile.Request]{})
	if err := src.Start(ctx, q); err != nil {
		fmt.Println(err)
		return
	}
	if err := src.WaitForSync(ctx); err != nil {
		fmt.Println(err)
	}
}

// Periodic polls a system that sends no events.
func ExampleNewPeriodic() {
	src := source.NewPeriodic(5*time.Minute, func(ctx context.Context) []reconcile.Request {
		return []reconcile.Request{{Name: "billing-account"}} // e.g. from an external API
	}, source.PeriodicOptions{Priority: queue.LowPriority})
	fmt.Println(src)
	// Output: source.Periodic every 5m0s
}

// Channel queues keys from outside Kubernetes, such as a webhook's.
func ExampleNewChannel() {
	q := queue.New[reconcile.Request](queue.Options[reconcile.Request]{})
	defer q.ShutDown()
	ch := make(chan reconcile.Request)
	if err := source.NewChannel(ch).Start(context.Background(), q); err != nil {
		fmt.Println(err)
		return
	}
	ch <- reconcile.Request{Namespace: "shop", Name: "checkout"}
	close(ch) // ends the source

	key, priority, _ := q.Get()
	fmt.Println(key, priority)
	q.Done(key)
	// Output: shop/checkout 0
}

// EnqueueOwner queues the controller that owns an object, here the
// Deployment that owns a ConfigMap.
func ExampleEnqueueOwner() {
	q := queue.New[reconcile.Request](queue.Options[reconcile.Request]{})
	defer q.ShutDown()
	handler := source.EnqueueOwner[*corev1.ConfigMap](
		schema.GroupKind{Group: "apps", Kind: "Deployment"}, source.OwnerOptions{})

	controller := true
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: "web-config", ResourceVersion: "1",
		OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: &controller},
		},
	}}
	handler.Handle(source.Event[*corev1.ConfigMap]{Type: source.Create, Object: cm, InInitialList: true}, q)

	key, priority, _ := q.Get()
	fmt.Println(key, priority)
	q.Done(key)
	// Output: shop/web -100
}
