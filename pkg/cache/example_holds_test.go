package cache_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// Two controllers added at run time watch ConfigMaps: they share one
// informer, which stops when the last of them releases its Lister.
// Registering and releasing need no cluster.
func ExampleLister_Release() {
	c, err := cache.New(&rest.Config{Host: "https://127.0.0.1:1"}, cache.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Owner: "controller-a"})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Owner: "controller-b"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range c.Status() {
		fmt.Println(st.GVK.Kind, "held by", st.Owners)
	}
	a.Release()
	fmt.Println("types cached after a's release:", len(c.Status()))
	b.Release()
	fmt.Println("types cached after b's release:", len(c.Status()))
	// Output:
	// ConfigMap held by map[controller-a:1 controller-b:1]
	// types cached after a's release: 1
	// types cached after b's release: 0
}
