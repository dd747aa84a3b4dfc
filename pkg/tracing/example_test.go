package tracing_test

import (
	"context"
	"fmt"

	"github.com/go-logr/logr/funcr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
	"github.com/opkit-dev/opkit/pkg/tracing"
)

// A controller with a TracerProvider makes one span per reconcile. In an
// operator, pass the provider FromEnv returns to
// manager.Options.TracerProvider instead: the manager hands it to its
// controllers and traces its clients' API requests too.
func Example() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reconciled := make(chan struct{})
	r := reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		close(reconciled)
		return reconcile.Done(), nil
	})
	c, err := controller.New("mirror", r, controller.Options[reconcile.Request]{
		TracerProvider: tp,
		Logger:         funcr.New(func(string, string) {}, funcr.Options{}),
	})
	if err != nil {
		panic(err)
	}
	keys := make(chan reconcile.Request, 1)
	keys <- reconcile.Request{Namespace: "platform", Name: "ca-bundle"}
	if err := c.Watch(source.NewChannel(keys)); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Start(ctx) }()
	<-reconciled
	cancel()
	<-done // the span has ended once Start returns

	s := exp.GetSpans()[0]
	fmt.Println(s.Name)
	for _, kv := range s.Attributes {
		if kv.Key != tracing.ReconcileIDKey {
			fmt.Printf("  %s=%s\n", kv.Key, kv.Value.String())
		}
	}
	// Output:
	// reconcile mirror
	//   k8s.namespace.name=platform
	//   opkit.name=ca-bundle
	//   opkit.controller=mirror
	//   opkit.result=success
}
