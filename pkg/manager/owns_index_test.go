package manager_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/owner"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// children records what the reconciler of an owner found with
// Lister.ControlledBy, or the error it got.
type children struct {
	mu    sync.Mutex
	found map[string][]string
	err   error
}

func (c *children) reconciler(owners *cache.Lister[*corev1.Secret], cms *cache.Lister[*corev1.ConfigMap]) reconcile.Reconciler[reconcile.Request] {
	return reconcile.Func[reconcile.Request](func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		o, err := owners.Get(req.Namespace, req.Name)
		if err != nil {
			return reconcile.Done(), nil
		}
		got, err := cms.ControlledBy(o)
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			c.err = err
			return reconcile.Done(), nil
		}
		names := []string{}
		for _, cm := range got {
			names = append(names, cm.Name)
		}
		if c.found == nil {
			c.found = map[string][]string{}
		}
		c.found[req.Name] = names
		return reconcile.Done(), nil
	})
}

// result is the last children found for owner, and the error of
// ControlledBy if it failed.
func (c *children) result(owner string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.found[owner], c.err
}

// Two controllers that own ConfigMaps share one controlled-by index, which
// Owns adds: the second does not fail with "index exists", and a
// reconciler of the owner lists its children with ControlledBy.
func TestOwnsIndexesChildrenByController(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{})
	// Registered by hand first: Owns reuses this registration.
	secrets, err := cache.Register[*corev1.Secret](m.Cache(), cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := cache.Register[*corev1.ConfigMap](m.Cache(), cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var c children
	if _, err := manager.NewController(m, "secrets", c.reconciler(secrets, cms),
		manager.For[*corev1.Secret](nil), manager.Owns[*corev1.ConfigMap](nil)); err != nil {
		t.Fatal(err)
	}
	var s seen
	if _, err := manager.NewController(m, "service-accounts", s.reconciler(),
		manager.For[*corev1.ServiceAccount](nil), manager.Owns[*corev1.ConfigMap](nil)); err != nil {
		t.Fatalf("a second controller owning ConfigMaps: %v", err)
	}
	start(t, m)

	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "parent", Namespace: ns}}
	if err := m.UncachedClient().Create(t.Context(), parent); err != nil {
		t.Fatal(err)
	}
	ref, err := owner.ControllerRef(m.Scheme(), parent)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("child-%d", i), Namespace: ns, OwnerReferences: []metav1.OwnerReference{ref},
		}}
		if err := m.UncachedClient().Create(t.Context(), child); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the owner to list its two children", func() bool {
		names, err := c.result(parent.Name)
		return err != nil || len(names) == 2
	})
	names, err := c.result(parent.Name)
	if err != nil {
		t.Fatalf("ControlledBy in the owner's reconciler: %v", err)
	}
	if diff := cmp.Diff([]string{"child-0", "child-1"}, names); diff != "" {
		t.Errorf("the owner's children (-want +got):\n%s", diff)
	}
}
