package client_test

import (
	"context"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"

	opkitclient "github.com/opkit-dev/opkit/pkg/client"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// A controller's writer applies as the controller's field owner, and
// skips an apply that would change nothing.
func ExampleNewWriter() {
	var cfg *rest.Config // from manager.Config
	mgr, err := manager.New(cfg, manager.Options{})
	if err != nil {
		panic(err)
	}
	w, err := opkitclient.NewWriter(mgr.CachedClient(), opkitclient.WriterOptions{
		Controller: "mirror", // the field owner, and the metrics' controller label
		Cache:      opkitclient.NewReader(mgr.Cache()),
		Registerer: mgr.Registry(),
	})
	if err != nil {
		panic(err)
	}

	// In a reconciler, once the manager has started:
	copyOf := corev1ac.ConfigMap("ca-bundle", "team-a").
		WithLabels(map[string]string{"mirror.samples.opkit.dev/name": "ca-bundle"}).
		WithData(map[string]string{"ca.crt": "..."})
	if err := w.Apply(context.Background(), copyOf); err != nil {
		panic(err)
	}
}
