package monitoring_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
)

// waitBound is how long the workload may take before the test gives up
// with what it last saw, rather than hang until go test's timeout. It is a
// bound on a hang, not a measure of speed: nothing is asserted about it.
const waitBound = 3 * time.Minute

func create(t *testing.T, cl client.Client, obj client.Object) {
	t.Helper()
	if err := cl.Create(t.Context(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// until lists into list in namespace ns until done is true of it,
// listing again at each change a watch reports, so that it never sleeps.
func until(t *testing.T, cl client.WithWatch, list client.ObjectList, ns, what string, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitBound)
	defer cancel()
	w, err := cl.Watch(ctx, list, client.InNamespace(ns))
	if err != nil {
		t.Fatalf("watch %T in %s: %v", list, ns, err)
	}
	defer w.Stop()
	for {
		if err := cl.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatalf("list %T in %s: %v", list, ns, err)
		}
		if done() {
			return
		}
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				w, err = cl.Watch(ctx, list, client.InNamespace(ns))
				if err != nil {
					t.Fatalf("waiting for %s: watch %T in %s: %v", what, list, ns, err)
				}
			}
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; last seen: %+v", what, context.Cause(ctx), list)
		}
	}
}

// waitReady waits until the Mirrors named are Ready for their generation.
func waitReady(t *testing.T, cl client.WithWatch, ns string, names ...string) {
	t.Helper()
	var list v1alpha1.MirrorList
	until(t, cl, &list, ns, "Mirrors "+ns+"/"+names[0]+"… Ready", func() bool {
		ready := 0
		for _, m := range list.Items {
			c := apimeta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionReady)
			if c != nil && c.Status == "True" && m.Status.ObservedGeneration == m.Generation {
				ready++
			}
		}
		return ready == len(names)
	})
}

// waitCopy waits until the copy ns/name holds data v = want.
func waitCopy(t *testing.T, cl client.WithWatch, ns, name, want string) {
	t.Helper()
	var list corev1.ConfigMapList
	until(t, cl, &list, ns, "copy "+ns+"/"+name+" at v="+want, func() bool {
		for _, cm := range list.Items {
			if cm.Name == name && cm.Data["v"] == want {
				return true
			}
		}
		return false
	})
}
