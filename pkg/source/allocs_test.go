//go:build !race

package source_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// The source's part of the event path allocates nothing: from the
// informer's callback through predicates and handler into the queue, and
// the worker's Get and Done. (The race detector allocates, hence the build
// tag.)
func TestEventPathAllocs(t *testing.T) {
	yes := true
	old, changed := configMap("ns", "a", 1), configMap("ns", "a", 2)
	old.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", Controller: &yes}}
	changed.OwnerReferences = old.OwnerReferences
	handlers := map[string]source.Handler[*corev1.ConfigMap, reconcile.Request]{
		"EnqueueObject": source.EnqueueObject[*corev1.ConfigMap](),
		"EnqueueOwner":  source.EnqueueOwner[*corev1.ConfigMap](schema.GroupKind{Group: "apps", Kind: "Deployment"}, source.OwnerOptions{}),
	}
	for name, h := range handlers {
		t.Run(name, func(t *testing.T) {
			inf := newFakeInformer()
			q := newQueue[reconcile.Request](t)
			src := source.NewInformer(inf, h, source.ResourceVersionChanged, source.LabelSelector[*corev1.ConfigMap](labels.Everything()))
			if err := src.Start(t.Context(), q); err != nil {
				t.Fatal(err)
			}
			events := inf.events()
			allocs := testing.AllocsPerRun(1000, func() {
				events.OnUpdate(old, changed)
				events.OnAdd(changed, true)
				events.OnDelete(changed)
				if q.Len() != 1 {
					t.Fatalf("%d keys queued, want 1", q.Len())
				}
				k, _, _ := q.Get()
				q.Done(k)
			})
			if allocs != 0 {
				t.Errorf("%v allocations per event, want 0", allocs)
			}
		})
	}
}
