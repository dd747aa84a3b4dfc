package cache_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	// The ShardedListAndWatch gate (alpha) only changes requests that carry
	// a shard selector, which only the sharded tests send.
	testenv.Main(m, testenv.Options{OptionalFeatureGates: map[string]bool{"ShardedListAndWatch": true}},
		func(e *testenv.Environment) { env = e })
}

var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// newCache returns a cache for the test control plane, started by start.
func newCache(t *testing.T, opts cache.Options) *cache.Cache {
	t.Helper()
	if opts.Mutations.OnMutation == nil {
		opts.Mutations.OnMutation = testenv.ReportMutations(t)
	}
	if opts.UnregisteredReads.OnRead == nil {
		opts.UnregisteredReads.OnRead = testenv.ReportUnregisteredReads(t)
	}
	c, err := cache.New(env.Config(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wrappedClient returns an HTTP client for the test control plane whose
// transport is wrap applied to the usual one.
func wrappedClient(t *testing.T, wrap func(next http.RoundTripper) http.RoundTripper) *http.Client {
	t.Helper()
	hc, err := rest.HTTPClientFor(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	hc.Transport = wrap(hc.Transport)
	return hc
}

// start starts c until the test ends and waits for it to sync.
func start(t *testing.T, c *cache.Cache) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		// The informers end asynchronously; give them a moment before the
		// next test counts goroutines.
		time.Sleep(50 * time.Millisecond)
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	syncCtx, cancelSync := context.WithTimeout(ctx, 30*time.Second)
	defer cancelSync()
	if err := c.WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}
}

func writeClient(t *testing.T) client.Client {
	t.Helper()
	cl, err := client.New(env.Config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// createConfigMaps creates the ConfigMaps the way users do: one with
// kubectl's client-side apply (the last-applied annotation and managed
// fields), one with server-side apply (managed fields), one plain.
func createConfigMaps(t *testing.T, ns string) {
	t.Helper()
	cl := writeClient(t)
	ctx := t.Context()
	csa := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "csa", Namespace: ns, Labels: map[string]string{"app": "a"},
			Annotations: map[string]string{
				corev1.LastAppliedConfigAnnotation: `{"apiVersion":"v1","kind":"ConfigMap","data":{"k":"v"}}`,
				"team":                             "blue",
			}},
		Data: map[string]string{"k": "v"},
	}
	if err := cl.Create(ctx, csa, client.FieldOwner("kubectl-client-side-apply")); err != nil {
		t.Fatal(err)
	}
	ssa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "ssa", "namespace": ns, "labels": map[string]any{"app": "b"}},
		"data":     map[string]any{"k": "v"},
	}}
	//lint:ignore SA1019 a patch of type apply is what kubectl's server-side apply sends
	if err := cl.Patch(ctx, ssa, client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns}}
	if err := cl.Create(ctx, plain); err != nil {
		t.Fatal(err)
	}
}

func TestTypedListerStripsAndShares(t *testing.T) {
	// Registered first, so it runs after the cleanup that stops the cache.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		// Idle HTTP/2 connections of the clients stay open for reuse.
		goleak.VerifyNone(t, ignore, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
	})
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)

	got, err := cms.Get(ns, "csa")
	if err != nil {
		t.Fatal(err)
	}
	if got.ManagedFields != nil {
		t.Errorf("managedFields cached: %v", got.ManagedFields)
	}
	if diff := cmp.Diff(map[string]string{"team": "blue"}, got.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if got.Data["k"] != "v" {
		t.Errorf("data = %v", got.Data)
	}
	again, _ := cms.Get(ns, "csa")
	if again != got {
		t.Error("two Gets returned different objects: the Lister copied")
	}
	ssa, err := cms.Get(ns, "ssa")
	if err != nil {
		t.Fatal(err)
	}
	if ssa.ManagedFields != nil {
		t.Errorf("managedFields of a server-side applied object cached: %v", ssa.ManagedFields)
	}

	_, err = cms.Get(ns, "missing")
	if !apierrors.IsNotFound(err) {
		t.Errorf("Get(missing) = %v, want NotFound", err)
	}

	all, err := cms.List(ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every namespace has the kube-root-ca.crt ConfigMap too, unless no
	// controller made it; count ours.
	if names := names(all); !containsAll(names, "csa", "ssa", "plain") {
		t.Errorf("List = %v", names)
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "a"})
	onlyA, err := cms.List(ns, sel)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"csa"}, names(onlyA)); diff != "" {
		t.Errorf("List(app=a) (-want +got):\n%s", diff)
	}
}

func TestKeepManagedFieldsAndLastApplied(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{KeepManagedFields: true, KeepLastApplied: true})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	got, err := cms.Get(ns, "csa")
	if err != nil {
		t.Fatal(err)
	}
	if got.ManagedFields == nil {
		t.Error("managedFields stripped although kept")
	}
	if _, ok := got.Annotations[corev1.LastAppliedConfigAnnotation]; !ok {
		t.Error("last-applied annotation stripped although kept")
	}
}

func TestTransformComposesWithStripping(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	var sawManagedFields bool
	c := newCache(t, cache.Options{
		Namespaces: []string{ns},
		Transform: func(obj any) (any, error) {
			cm := obj.(*corev1.ConfigMap)
			sawManagedFields = sawManagedFields || cm.ManagedFields != nil
			cm.Data = nil // drop what this operator never reads
			return cm, nil
		},
	})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	got, err := cms.Get(ns, "csa")
	if err != nil {
		t.Fatal(err)
	}
	if got.Data != nil {
		t.Errorf("the user's transform did not run: data = %v", got.Data)
	}
	if sawManagedFields {
		t.Error("the user's transform ran before the stripping")
	}
}

func TestNamespaceScope(t *testing.T) {
	inside, outside := env.Namespace(t), env.Namespace(t)
	createConfigMaps(t, inside)
	createConfigMaps(t, outside)
	c := newCache(t, cache.Options{})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Namespaces: []string{inside}})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	if _, err := cms.Get(inside, "csa"); err != nil {
		t.Error(err)
	}
	_, err = cms.Get(outside, "csa")
	if err == nil || !strings.Contains(err.Error(), "not cached") || !strings.Contains(err.Error(), inside) {
		t.Errorf("Get in an uncached namespace = %v, want an error naming the cached namespaces", err)
	}
	all, err := cms.List("", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range all {
		if cm.Namespace != inside {
			t.Errorf("List returned %s/%s from outside the cached namespace", cm.Namespace, cm.Name)
		}
	}
}

func TestSelectorScope(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"app": "b"})})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	all, err := cms.List(ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ssa"}, names(all)); diff != "" {
		t.Errorf("cached (-want +got):\n%s", diff)
	}
}

func TestMetadataOnly(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Metadata(c, configMapGVK, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	got, err := cms.Get(ns, "csa")
	if err != nil {
		t.Fatal(err)
	}
	if got.GroupVersionKind() != configMapGVK {
		t.Errorf("GVK = %v, want %v", got.GroupVersionKind(), configMapGVK)
	}
	if got.Labels["app"] != "a" || got.ManagedFields != nil {
		t.Errorf("metadata = %+v", got.ObjectMeta)
	}
	if _, ok := got.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		t.Error("last-applied annotation kept in metadata-only form")
	}
}

func TestUnstructured(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Unstructured(c, configMapGVK, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	got, err := cms.Get(ns, "ssa")
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(got.Object, "data", "k"); v != "v" {
		t.Errorf("data.k = %q", v)
	}
	if got.GetManagedFields() != nil {
		t.Error("managedFields cached in unstructured form")
	}
}

func TestIndex(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byApp := func(cm *corev1.ConfigMap) []string {
		if a := cm.Labels["app"]; a != "" {
			return []string{a}
		}
		return nil
	}
	if err := cms.AddIndex("app", byApp); err != nil {
		t.Fatal(err)
	}
	start(t, c)
	got, err := cms.ByIndex("app", "b")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ssa"}, names(got)); diff != "" {
		t.Errorf("ByIndex(app, b) (-want +got):\n%s", diff)
	}
	// An index added to running informers covers what they hold already.
	if err := cms.AddIndex("late", byApp); err != nil {
		t.Fatalf("AddIndex after start: %v", err)
	}
	if got, err := cms.ByIndex("late", "b"); err != nil || !slices.Equal(names(got), []string{"ssa"}) {
		t.Errorf("ByIndex(late, b) = %v, %v; want ssa", names(got), err)
	}
	if _, err := cms.ByIndex("nonesuch", "x"); err == nil {
		t.Error("ByIndex of an index never added succeeded")
	}
}

func TestLookupOfUnregisteredType(t *testing.T) {
	c := newCache(t, cache.Options{})
	_, err := cache.Lookup[*corev1.Secret](c)
	if !errors.Is(err, cache.ErrNotRegistered) || !strings.Contains(err.Error(), "Secret") {
		t.Errorf("Lookup of an unregistered type = %v, want ErrNotRegistered naming Secret", err)
	}
	if _, err := cache.Register[*corev1.Secret](c, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Lookup[*corev1.Secret](c); err != nil {
		t.Errorf("Lookup after Register = %v", err)
	}
}

func TestRegisterTwiceSharesInformers(t *testing.T) {
	c := newCache(t, cache.Options{})
	a, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Status()); n != 1 {
		t.Errorf("two registrations of one type and scope made %d informer sets, want 1", n)
	}
	_ = a
	_ = b
}

func TestForbiddenNamesResourceAndVerb(t *testing.T) {
	cfg := rest.CopyConfig(env.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "opkit-test-nobody"}
	c, err := cache.New(cfg, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Register[*corev1.Secret](c, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancelWait := context.WithTimeout(ctx, 3*time.Second)
	defer cancelWait()
	err = c.WaitForSync(waitCtx)
	if !errors.Is(err, cache.ErrNotSynced) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForSync = %v, want ErrNotSynced and the deadline", err)
	}
	for _, want := range []string{"secrets", "forbidden", "RBAC", `"list"`, "/v1, Kind=Secret"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("WaitForSync error %q does not mention %q", err, want)
		}
	}
}

func TestRemove(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	cache.Remove(cms)
	if _, err := cms.Get(ns, "csa"); !errors.Is(err, cache.ErrRemoved) {
		t.Errorf("Get after Remove = %v, want ErrRemoved", err)
	}
	if n := len(c.Status()); n != 0 {
		t.Errorf("Status lists %d types after Remove, want 0", n)
	}
	// The type can be registered again, with new informers.
	again, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, again.HasSynced)
	if _, err := again.Get(ns, "csa"); err != nil {
		t.Error(err)
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts cache.Options
		want string
	}{
		{"negative resync", cache.Options{ResyncPeriod: -time.Second}, "Options.ResyncPeriod"},
		{"negative poll", cache.Options{CRDPollInterval: -time.Second}, "Options.CRDPollInterval"},
		{"empty namespace", cache.Options{Namespaces: []string{"a", ""}}, "Options.Namespaces[1]"},
		{"duplicate namespace", cache.Options{Namespaces: []string{"a", "a"}}, `lists "a" twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cache.New(env.Config(), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error naming %s", err, tc.want)
			}
		})
	}
	if _, err := cache.New(nil, cache.Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
}

func names[T interface{ GetName() string }](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func containsAll(have []string, want ...string) bool {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return true
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// After the initial list, the watch keeps every form up to date: creations,
// updates and deletions show through the Lister.
func TestWatchKeepsFormsCurrent(t *testing.T) {
	ns := env.Namespace(t)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	typedL, metaL, unsL := allForms(t, c)
	start(t, c)
	labelOf := map[string]func() string{
		"typed": func() string {
			o, err := typedL.Get(ns, "live")
			if err != nil {
				return err.Error()
			}
			return o.Labels["v"]
		},
		"metadata": func() string {
			o, err := metaL.Get(ns, "live")
			if err != nil {
				return err.Error()
			}
			return o.Labels["v"]
		},
		"unstructured": func() string {
			o, err := unsL.Get(ns, "live")
			if err != nil {
				return err.Error()
			}
			return o.GetLabels()["v"]
		},
	}
	waitAll := func(want string) {
		t.Helper()
		for form, get := range labelOf {
			waitFor(t, 10*time.Second, func() bool { return get() == want })
			_ = form
		}
	}
	cl := writeClient(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live", Namespace: ns, Labels: map[string]string{"v": "1"}}}
	if err := cl.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	waitAll("1")
	cm.Labels["v"] = "2"
	if err := cl.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	waitAll("2")
	if err := cl.Delete(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	for form, get := range labelOf {
		waitFor(t, 10*time.Second, func() bool { return strings.Contains(get(), "not found") })
		_ = form
	}
}

func TestGetDoesNotAllocate(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := cms.Get(ns, "csa"); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Get allocates %v times, want 0", n)
	}
}

// Lists of a namespace are remembered until the store changes: a change
// shows in the next List, and the caller's slice is its own.
func TestListSeesChangesAndOwnsItsSlice(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	for _, scoped := range []bool{false, true} {
		t.Run(fmt.Sprintf("scoped=%v", scoped), func(t *testing.T) {
			opts := cache.Options{}
			if scoped {
				opts.Namespaces = []string{ns}
			}
			c := newCache(t, opts)
			cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			start(t, c)
			first, err := cms.List(ns, nil)
			if err != nil {
				t.Fatal(err)
			}
			n := len(first)
			first[0] = nil // the caller's slice
			again, _ := cms.List(ns, nil)
			if len(again) != n || slices.Contains(again, nil) {
				t.Fatalf("second List = %d objects (nil among them: %v), want %d", len(again), slices.Contains(again, nil), n)
			}
			name := fmt.Sprintf("added-%v", scoped)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
			if err := writeClient(t).Create(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, func() bool {
				got, _ := cms.List(ns, nil)
				return slices.Contains(names(got), name)
			})
			if err := writeClient(t).Delete(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, func() bool {
				got, _ := cms.List(ns, nil)
				return !slices.Contains(names(got), name)
			})
		})
	}
}
