package finalizer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/opkit-dev/opkit/pkg/finalizer"
)

// A reconciler calls Finalize first and stops when the object is being
// deleted. controller-runtime's fake client stands in for the API server
// here so that the example runs without one.
func ExampleFinalize() {
	const name = "samples.opkit.dev/cleanup"
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca-bundle", Namespace: "platform"}}
	c := fake.NewClientBuilder().WithObjects(cm).Build()
	cleanup := func(context.Context) error {
		fmt.Println("cleaning up")
		return nil
	}
	reconcile := func() {
		cur := &corev1.ConfigMap{} // in a reconciler: from a Lister, unmodified
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cur); err != nil {
			fmt.Println(err)
			return
		}
		deleting, err := finalizer.Finalize(ctx, c, cur, name, cleanup)
		if deleting || err != nil {
			fmt.Println("stop:", deleting, err)
			return
		}
		fmt.Println("reconciling; the cached object still holds", cur.Finalizers)
	}

	reconcile()
	if err := c.Delete(ctx, cm); err != nil {
		fmt.Println(err)
	}
	reconcile()
	reconcile()
	// Output:
	// reconciling; the cached object still holds []
	// cleaning up
	// stop: true <nil>
	// configmaps "ca-bundle" not found
}

// Validate lets a test pin the finalizer name an operator uses.
func ExampleValidate() {
	fmt.Println(finalizer.Validate("samples.opkit.dev/cleanup"))
	fmt.Println(finalizer.Validate("cleanup"))
	// Output:
	// <nil>
	// invalid finalizer name "cleanup": must have a domain prefix you own, e.g. samples.opkit.dev/cleanup, so that it cannot collide with another controller's
}
