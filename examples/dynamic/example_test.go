package dynamic_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/examples/dynamic"
)

// Each kind's controller, and the hold on its kind, is named after the
// kind: cache.TypeStatus.Owners and /debug/holds list these owners.
func ExampleControllerName() {
	fmt.Println(dynamic.ControllerName(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}))
	fmt.Println(dynamic.ControllerName(schema.GroupVersionKind{Group: "example.opkit.dev", Version: "v1", Kind: "Website"}))
	// Output:
	// kind-configmap.v1
	// kind-website.v1.example.opkit.dev
}
