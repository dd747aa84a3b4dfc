package cache_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// A replica of a sharded operator caches only the ConfigMaps of the slots
// it holds. Before Start, SetSlots only records the slots; after, it
// returns once the new slots' informers have synced. Registering needs no
// cluster.
func ExampleCache_SetSlots() {
	slots, _ := sharding.NewSlots(16)
	c, err := cache.New(&rest.Config{Host: "https://127.0.0.1:1"}, cache.Options{
		Sharding: cache.ShardingOptions{Slots: slots},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Sharded: true, ShardKey: sharding.ByUID}); err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := c.SetSlots(ctx, []int{0, 1, 2, 3, 9}); err != nil {
		fmt.Println(err)
		return
	}
	err = c.SetSlots(ctx, []int{16})
	fmt.Println("slot 16 of 16 refused:", errors.Is(err, sharding.ErrInvalidSlots))
	// Output:
	// slot 16 of 16 refused: true
}
