package cache_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// A controller that must watch every Secret but reads few: the cache
// holds their metadata, and Get fetches a Secret in full when first read.
// Registering needs no cluster.
func ExampleLazy() {
	c, err := cache.New(&rest.Config{Host: "https://127.0.0.1:1"}, cache.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	secrets, err := cache.Lazy[*corev1.Secret](c, cache.TypeOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Event sources attach to the metadata Lister:
	// source.NewKind(secrets.Metadata(), handler). A reconciler reads
	// with secrets.Get(ctx, namespace, name).
	st := c.Status()[0]
	fmt.Println("caching", secrets.GroupVersionKind().Kind, "as", st.Form)
	fmt.Println("events from", secrets.Metadata().GroupVersionKind().Kind, "metadata")
	// Output:
	// caching Secret as metadata
	// events from Secret metadata
}
