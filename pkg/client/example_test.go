package client_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	opkitclient "github.com/opkit-dev/opkit/pkg/client"
)

// Reading a kind the cache was not told to cache is an error that says how
// to register it; it needs no cluster, since no informer is started.
func ExampleReader_Get() {
	c, err := cache.New(&rest.Config{Host: "https://127.0.0.1:1"}, cache.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := cache.For[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	r := opkitclient.NewReader(c)

	key := crclient.ObjectKey{Namespace: "default", Name: "db"}
	err = r.Get(context.Background(), key, &corev1.Secret{})
	fmt.Println(errors.Is(err, cache.ErrNotRegistered))
	fmt.Println(err)

	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	fmt.Println(r.Get(context.Background(), key, meta))
	// Output:
	// true
	// get Secret default/db: cache: read /v1, Kind=Secret (typed form): type not registered with the cache: register it with cache.For[*v1.Secret] before Start
	// get ConfigMap default/db: cache: read /v1, Kind=ConfigMap (metadata form): type not registered with the cache: register it with cache.Metadata with its GroupVersionKind before Start (it is registered in typed form: read it in that form)
}
