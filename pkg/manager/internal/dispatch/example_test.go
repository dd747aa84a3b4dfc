package dispatch_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/cache/cachetest"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager/internal/dispatch"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// A gate admits the keys of the slots this replica holds and skips the
// others. Here the replica holds slot 0 of two, and ConfigMaps are sharded
// by UID: the key's slot comes from the cached object. A key whose object
// is not cached is retried: no replica can tell its slot yet.
func ExampleGate() {
	slots, _ := sharding.NewSlots(2)
	static, err := cachetest.New(cachetest.Options{},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "5d2c9e7a-1f43-4b8e-a6d0-92c4e1f7a3b5"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "0b6f4c1e-8a65-4d3a-9c51-3f2a7e9d1b20"}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	d, err := dispatch.New(dispatch.MemberFunc(func(slot int) bool { return slot == 0 }), dispatch.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := dispatch.NewGate(d, static.Lister(), dispatch.GateOptions{Controller: "example", Slots: slots})
	if err != nil {
		fmt.Println(err)
		return
	}
	verdicts := map[controller.Verdict]string{controller.Admit: "admit", controller.Skip: "skip", controller.Retry: "retry"}
	for _, name := range []string{"a", "b", "gone"} {
		v, done := g.Admit(reconcile.Request{Namespace: "ns", Name: name}, 0)
		fmt.Printf("%s: %s\n", name, verdicts[v])
		if done != nil {
			done(false) // after the reconcile
		}
	}
	// Output:
	// a: admit
	// b: skip
	// gone: retry
}
