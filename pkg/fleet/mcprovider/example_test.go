package mcprovider_test

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/providers/clusters"

	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/fleet/mcprovider"
)

// multicluster-runtime's clusters provider adds a cluster, which the
// fleet engages as a member; nothing connects to it until a type is
// registered.
func ExampleAware() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := fleet.New(fleet.Options{})
	if err != nil {
		panic(err)
	}
	cl, err := cluster.New(&rest.Config{Host: "https://east.example:6443"})
	if err != nil {
		panic(err)
	}
	p := clusters.New()
	if err := p.Add(ctx, "east", cl, mcprovider.Aware(f)); err != nil {
		panic(err)
	}
	fmt.Println(f.Clusters())
	// Output:
	// [east]
}
