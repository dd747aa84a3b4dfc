package cache_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/cache/cachetest"
)

// After a write, a test waits until the cache holds what the API server
// returned before it reads, or reconciles, again. Here an in-memory store
// stands in for a cache.
func ExampleLister_WaitFor() {
	store, err := cachetest.New(cachetest.Options{}, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "ca-bundle", ResourceVersion: "41"},
	})
	if err != nil {
		panic(err)
	}
	configMaps := store.Lister()

	// What a write returned, say cl.Update(ctx, cm): resourceVersion 41.
	written := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "ca-bundle", ResourceVersion: "41"}}
	fmt.Println(configMaps.WaitFor(context.Background(), written))

	// A write the cache has not seen: WaitFor returns when ctx ends, and
	// says what it waited for and what the cache holds.
	written.ResourceVersion = "42"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(configMaps.WaitFor(ctx, written))
	// Output:
	// <nil>
	// cache: wait for ConfigMap platform/ca-bundle at resourceVersion 42: the cache holds resourceVersion 41: context canceled
}
