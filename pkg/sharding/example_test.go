package sharding_test

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/opkit-dev/opkit/pkg/sharding"
)

// A replica that holds slots 0, 1 and 3 of 4 lists two ranges: adjacent
// slots merge.
func ExampleSlots_Selector() {
	slots, err := sharding.NewSlots(4)
	if err != nil {
		panic(err)
	}
	sel, err := slots.Selector(sharding.ByUID, []int{3, 0, 1})
	fmt.Println(sel, err)

	_, err = slots.Selector(sharding.ByUID, nil)
	fmt.Println(errors.Is(err, sharding.ErrNoSlots))
	// Output:
	// shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000') <nil>
	// true
}

// A slot count that is not a power of two is refused, saying what to use.
func ExampleNewSlots() {
	_, err := sharding.NewSlots(10)
	fmt.Println(err)
	// Output: invalid slots: count 10: use a power of two from 1 to 1024 (1, 2, 4, ..., 1024)
}

// A child follows its controller owner: it lands in the slot its parent has
// by UID.
func ExampleKey() {
	slots, _ := sharding.NewSlots(16)
	parent := &metav1.ObjectMeta{UID: "5e0f6a3c-8b1d-4c7e-9a2f-0d3b6c9e1f4a"}
	child := &metav1.ObjectMeta{UID: "a1b2c3d4-0000-4000-8000-000000000001", OwnerReferences: []metav1.OwnerReference{
		*metav1.NewControllerRef(parent, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}),
	}}
	fmt.Println(slots.SlotOf(sharding.ByControllerOwner, child) == slots.SlotOf(sharding.ByUID, parent))
	// Output: true
}

// An informer factory that caches only the held slots' ConfigMaps where the
// API server applies shard selectors, and everything (to be filtered with
// SlotOf before dispatch) where it does not.
func ExampleTweakListOptions() {
	_ = func(ctx context.Context, client kubernetes.Interface, meta metadata.Interface, slots sharding.Slots, held []int, namespace string) (informers.SharedInformerFactory, error) {
		leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
		ok, err := sharding.Supported(ctx, meta, leases, namespace)
		if err != nil || !ok {
			return informers.NewSharedInformerFactory(client, 0), err
		}
		sel, err := slots.Selector(sharding.ByUID, held)
		if err != nil {
			return nil, err
		}
		return informers.NewSharedInformerFactoryWithOptions(client, 0,
			informers.WithTweakListOptions(sharding.TweakListOptions(sel))), nil
	}
}
