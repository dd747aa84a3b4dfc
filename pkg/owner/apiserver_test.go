package owner_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/owner"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// The API server accepts the references as they are built, a create with
// ControllerRef and a server-side apply with ApplyControllerRef, and the
// cache's ControlledBy finds both children of the owner, read from the
// cache, and no other.
func TestReferencesOnTheAPIServer(t *testing.T) {
	ns := env.Namespace(t)
	ctx := t.Context()
	cms := env.Client().CoreV1().ConfigMaps(ns)
	scheme := newScheme(t)
	c, err := cache.New(env.Config(), cache.Options{
		Scheme:     scheme,
		Namespaces: []string{ns},
		Mutations:  cache.MutationOptions{OnMutation: testenv.ReportMutations(t)},
	})
	if err != nil {
		t.Fatal(err)
	}
	lister, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startCache(t, c)

	for _, name := range []string{"owner", "other"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var parent *corev1.ConfigMap
	eventually(t, func() bool { parent, err = lister.Get(ns, "owner"); return err == nil })

	ref, err := owner.ControllerRef(scheme, parent)
	if err != nil {
		t.Fatal(err)
	}
	created := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "created", OwnerReferences: []metav1.OwnerReference{ref}}}
	if created, err = cms.Create(ctx, created, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]metav1.OwnerReference{ref}, created.OwnerReferences); diff != "" {
		t.Errorf("the created child's references as stored (-want +got):\n%s", diff)
	}
	ac, err := owner.ApplyControllerRef(scheme, parent)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := cms.Apply(ctx, corev1ac.ConfigMap("applied", ns).WithOwnerReferences(ac), metav1.ApplyOptions{FieldManager: "owner-test"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]metav1.OwnerReference{ref}, applied.OwnerReferences); diff != "" {
		t.Errorf("the applied child's references as stored (-want +got):\n%s", diff)
	}

	var children []*corev1.ConfigMap
	eventually(t, func() bool {
		children, err = lister.ControlledBy(parent)
		return err == nil && len(children) == 2
	})
	got := []string{children[0].Name, children[1].Name}
	if diff := cmp.Diff([]string{"applied", "created"}, got); diff != "" {
		t.Errorf("ControlledBy(owner) (-want +got):\n%s", diff)
	}
}

func startCache(t *testing.T, c *cache.Cache) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	syncCtx, cancelSync := context.WithTimeout(ctx, 30*time.Second)
	defer cancelSync()
	if err := c.WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}
}

// eventually waits for cond, which the cache's watch makes true, failing
// the test if it is not within a generous bound.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the cache did not catch up within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
