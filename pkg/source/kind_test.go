package source_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// Integration tests: Kind sources over a cache of the test control plane's
// ConfigMaps.

// configMaps registers ConfigMaps of ns with a new cache, which startCache
// starts.
func configMaps(t *testing.T, ns string) (*cache.Cache, *cache.Lister[*corev1.ConfigMap]) {
	t.Helper()
	c, err := cache.New(env.Config(), cache.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c, l
}

// startCache starts c until the test ends.
func startCache(t *testing.T, c *cache.Cache) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// startSource starts src on a new queue and waits for it to sync.
func startSource(t *testing.T, ctx context.Context, src interface {
	source.Source[reconcile.Request]
	source.Syncing
}) *queue.Queue[reconcile.Request] {
	t.Helper()
	q := newQueue[reconcile.Request](t)
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := src.WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}
	return q
}

// next returns the next key a worker would get, failing the test if none
// comes within 30 seconds.
func next(t *testing.T, q *queue.Queue[reconcile.Request]) item {
	t.Helper()
	got := make(chan item, 1)
	go func() {
		k, p, _ := q.Get()
		q.Done(k)
		got <- item{k, p}
	}()
	select {
	case it := <-got:
		return it
	case <-time.After(30 * time.Second):
		t.Fatal("no key queued within 30s")
		return item{}
	}
}

// expect checks that want, in any order, is what q hands out next, and
// that nothing else is ready.
func expect(t *testing.T, q *queue.Queue[reconcile.Request], want ...item) {
	t.Helper()
	var got []item
	for range want {
		got = append(got, next(t, q))
	}
	// An informer lists in no particular order.
	slices.SortFunc(got, byKey)
	slices.SortFunc(want, byKey)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d more keys queued: %v", n, drain(q))
	}
}

func newConfigMap(ns, name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

func create(t *testing.T, cs kubernetes.Interface, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func update(t *testing.T, cs kubernetes.Interface, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(cm.Namespace).Update(t.Context(), cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// A Kind source started before its cache queues the initial list at low
// priority, then creates, updates and deletes at normal priority.
func TestKind(t *testing.T) {
	ns := env.Namespace(t)
	cs := env.Client()
	a := create(t, cs, newConfigMap(ns, "a", nil))
	c, cms := configMaps(t, ns)
	src := source.NewKind(cms, source.EnqueueObject[*corev1.ConfigMap]())
	if got, want := src.String(), "source.Kind[*v1.ConfigMap] of v1/ConfigMap"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	q := newQueue[reconcile.Request](t)
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	startCache(t, c)
	syncCtx, cancelSync := context.WithTimeout(ctx, 30*time.Second)
	defer cancelSync()
	if err := src.WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}
	expect(t, q, low(ns, "a"))

	create(t, cs, newConfigMap(ns, "b", nil))
	expect(t, q, normal(ns, "b"))
	a.Data = map[string]string{"k": "v"}
	update(t, cs, a)
	expect(t, q, normal(ns, "a"))
	if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, q, normal(ns, "b"))
}

// A ConfigMap owned by a Secret queues the Secret; a map function queues
// the keys a label names, in another namespace.
func TestKindOwnerAndMapped(t *testing.T) {
	ns := env.Namespace(t)
	cs := env.Client()
	c, cms := configMaps(t, ns)
	ctx := startCache(t, c)
	owners := startSource(t, ctx, source.NewKind(cms,
		source.EnqueueOwner[*corev1.ConfigMap](schema.GroupKind{Kind: "Secret"}, source.OwnerOptions{})))
	mapped := startSource(t, ctx, source.NewKind(cms,
		source.EnqueueMapped(func(cm *corev1.ConfigMap) []reconcile.Request {
			if name := cm.Labels["mirror-to"]; name != "" {
				return []reconcile.Request{{Namespace: "elsewhere", Name: name}}
			}
			return nil
		})))

	secret, err := cs.CoreV1().Secrets(ns).Create(t.Context(),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	cm := newConfigMap(ns, "owned", map[string]string{"mirror-to": "m1"})
	cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: secret.Name, UID: secret.UID, Controller: &yes}}
	cm = create(t, cs, cm)
	expect(t, owners, normal(ns, "owner"))
	expect(t, mapped, normal("elsewhere", "m1"))

	// Moving the label to another target queues both the old and the new.
	cm.Labels["mirror-to"] = "m2"
	update(t, cs, cm)
	expect(t, owners, normal(ns, "owner"))
	got := []item{next(t, mapped), next(t, mapped)}
	if diff := cmp.Diff([]item{normal("elsewhere", "m1"), normal("elsewhere", "m2")}, got); diff != "" {
		t.Errorf("mapped (-want +got):\n%s", diff)
	}
}

// A LabelsChanged predicate drops updates of data only. ConfigMaps have no
// generation, so labels stand in for the spec here.
func TestKindPredicate(t *testing.T) {
	ns := env.Namespace(t)
	cs := env.Client()
	a := create(t, cs, newConfigMap(ns, "a", map[string]string{"v": "1"}))
	b := create(t, cs, newConfigMap(ns, "b", map[string]string{"v": "1"}))
	c, cms := configMaps(t, ns)
	ctx := startCache(t, c)
	q := startSource(t, ctx, source.NewKind(cms, source.EnqueueObject[*corev1.ConfigMap](),
		source.LabelsChanged))
	expect(t, q, low(ns, "a"), low(ns, "b"))

	a.Data = map[string]string{"k": "v"}
	update(t, cs, a) // dropped
	b.Labels["v"] = "2"
	update(t, cs, b) // kept; one informer delivers in order, so a's would come first
	expect(t, q, normal(ns, "b"))
}

// A Kind source whose cache never syncs fails WaitForSync with an error
// that names its type and kind and wraps the context's cause.
func TestKindWaitForSyncError(t *testing.T) {
	c, err := cache.New(&rest.Config{Host: "https://127.0.0.1:1"}, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := source.NewKind(cms, source.EnqueueObject[*corev1.ConfigMap]())
	if err := src.Start(t.Context(), newQueue[reconcile.Request](t)); err != nil {
		t.Fatal(err)
	}
	cause := errors.New("sync timeout")
	ctx, cancel := context.WithTimeoutCause(t.Context(), 50*time.Millisecond, cause)
	defer cancel()
	err = src.WaitForSync(ctx)
	want := "wait for source.Kind[*v1.ConfigMap] of v1/ConfigMap to sync: sync timeout"
	if !errors.Is(err, cause) || err.Error() != want {
		t.Errorf("WaitForSync() = %v, want %q wrapping the cause", err, want)
	}
}

// The objects a Kind source hands its handler carry their apiVersion and
// kind, as controller-runtime's do: an owner reference or a log line built
// from them names the kind.
func TestKindObjectsCarryTheirKind(t *testing.T) {
	ns := env.Namespace(t)
	cs := env.Client()
	create(t, cs, newConfigMap(ns, "listed", nil))
	c, cms := configMaps(t, ns)
	ctx := startCache(t, c)
	q := startSource(t, ctx, source.NewKind(cms,
		source.EnqueueMapped(func(cm *corev1.ConfigMap) []reconcile.Request {
			apiVersion, kind := cm.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
			return []reconcile.Request{{Namespace: cm.Name, Name: apiVersion + ", " + kind}}
		})))
	create(t, cs, newConfigMap(ns, "watched", nil))
	expect(t, q, low("listed", "v1, ConfigMap"), normal("watched", "v1, ConfigMap"))
}
