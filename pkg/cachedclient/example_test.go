package cachedclient_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/cachedclient"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// Reading a kind the cache was not told to cache is an error that says how
// to register it; it needs no cluster, since no informer is started. In
// tests the read is also reported (Fail, which testenv.Main turns on), so
// that a reader that swallows the error still fails its test.
func ExampleReader_Get() {
	c, err := cache.New(&rest.Config{Host: "https://127.0.0.1:1"}, cache.Options{
		UnregisteredReads: cache.UnregisteredReadOptions{Fail: true, OnRead: func(e *cache.UnregisteredReadError) {
			fmt.Println("reported:", e.GVK.Kind, e.Form)
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	r := cachedclient.NewReader(c)

	key := crclient.ObjectKey{Namespace: "default", Name: "db"}
	err = r.Get(context.Background(), key, &corev1.Secret{})
	fmt.Println(errors.Is(err, cache.ErrNotRegistered))
	fmt.Println(err)

	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	fmt.Println(r.Get(context.Background(), key, meta))
	// Output:
	// reported: Secret typed
	// true
	// get Secret default/db: cache: read /v1, Kind=Secret (typed form): type not registered with the cache: register it with cache.Register[*v1.Secret] before Start
	// reported: ConfigMap metadata
	// get ConfigMap default/db: cache: read /v1, Kind=ConfigMap (metadata form): type not registered with the cache: register it with cache.Metadata with its GroupVersionKind before Start (it is registered in typed form: read it in that form)
}

// controller-runtime's helpers run on the manager's cached client: the
// reads come from the cache, copied, and the writes go to the API server.
func ExampleNew() {
	var cfg *rest.Config // from manager.Config
	mgr, err := manager.New(cfg, manager.Options{})
	if err != nil {
		panic(err)
	}
	if _, err := cache.Register[*corev1.ConfigMap](mgr.Cache(), cache.TypeOptions{}); err != nil {
		panic(err)
	}
	cl := mgr.CachedClient() // cachedclient.New(cachedclient.NewReader(mgr.Cache()), mgr.Client())

	// In a reconciler, once the manager has started:
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}}
	op, err := controllerutil.CreateOrUpdate(ctx, cl, cm, func() error {
		cm.Data = map[string]string{"level": "debug"} // cm is the caller's copy
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(op)
}
