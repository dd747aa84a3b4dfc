package cachedclient_test

import (
	"context"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/cachedclient"
)

// A controller's writer applies as the controller's field owner, and
// skips an apply that would change nothing. A controller of a manager
// gets its writer from manager.Manager.Writer; NewWriter builds one over
// a cache and client of your own.
func ExampleNewWriter() {
	var cfg *rest.Config // from manager.Config
	c, err := cache.New(cfg, cache.Options{})
	if err != nil {
		panic(err)
	}
	direct, err := crclient.New(cfg, crclient.Options{})
	if err != nil {
		panic(err)
	}
	reader := cachedclient.NewReader(c)
	w, err := cachedclient.NewWriter(cachedclient.New(reader, direct), cachedclient.WriterOptions{
		Controller: "mirror", // the field owner, and the metrics' controller label
		Cache:      reader,
	})
	if err != nil {
		panic(err)
	}

	// In a reconciler, once the cache has started:
	copyOf := corev1ac.ConfigMap("ca-bundle", "team-a").
		WithLabels(map[string]string{"mirror.samples.opkit.dev/name": "ca-bundle"}).
		WithData(map[string]string{"ca.crt": "..."})
	if err := w.Apply(context.Background(), copyOf); err != nil {
		panic(err)
	}
}
