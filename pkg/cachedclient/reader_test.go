package cachedclient_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/cachedclient"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

var (
	configMapGVK     = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	configMapListGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMapList"}
)

// fixture is a cache of the ConfigMaps of one namespace in all three forms,
// with an index "k" on the typed form by data.k, and every Namespace.
type fixture struct {
	ns     string
	cache  *cache.Cache
	lister *cache.Lister[*corev1.ConfigMap]
	reader *cachedclient.Reader
	writer crclient.Client
	// unregistered are the reads of unregistered kinds reported so far;
	// a test that makes them on purpose takes them, and any left at the
	// end fail it.
	unregistered []*cache.UnregisteredReadError
	mu           sync.Mutex
}

// takeUnregistered returns the reads of unregistered kinds reported since
// the last call.
func (f *fixture) takeUnregistered() []*cache.UnregisteredReadError {
	f.mu.Lock()
	defer f.mu.Unlock()
	got := f.unregistered
	f.unregistered = nil
	return got
}

// newFixture creates ConfigMaps b (team a, k=1), a (team a, k=2) and c
// (team b, k=1) in a new namespace, then starts a cache of them.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ns: env.Namespace(t)}
	w, err := crclient.New(env.Config(), crclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.writer = w
	for _, cm := range []struct{ name, team, k string }{{"b", "a", "1"}, {"a", "a", "2"}, {"c", "b", "1"}} {
		obj := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: cm.name, Labels: map[string]string{"team": cm.team}},
			Data:       map[string]string{"k": cm.k},
		}
		if err := w.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	c, err := cache.New(env.Config(), cache.Options{
		Namespaces: []string{f.ns},
		Mutations:  cache.MutationOptions{OnMutation: testenv.ReportMutations(t)},
		UnregisteredReads: cache.UnregisteredReadOptions{Fail: true, OnRead: func(err *cache.UnregisteredReadError) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.unregistered = append(f.unregistered, err)
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.cache = c
	if f.lister, err = cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.lister.AddIndex("k", func(cm *corev1.ConfigMap) []string { return []string{cm.Data["k"]} }); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Metadata(c, configMapGVK, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Register[*corev1.Namespace](c, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Unstructured(c, configMapGVK, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
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
	f.reader = cachedclient.NewReader(c)
	t.Cleanup(func() {
		for _, err := range f.takeUnregistered() {
			t.Error(err)
		}
	})
	return f
}

func TestGetInEachForm(t *testing.T) {
	f := newFixture(t)
	key := crclient.ObjectKey{Namespace: f.ns, Name: "a"}

	cm := &corev1.ConfigMap{}
	if err := f.reader.Get(t.Context(), key, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["k"] != "2" || cm.Kind != "ConfigMap" || cm.APIVersion != "v1" {
		t.Errorf("typed Get = kind %q apiVersion %q data %v, want ConfigMap v1 k=2", cm.Kind, cm.APIVersion, cm.Data)
	}

	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(configMapGVK)
	if err := f.reader.Get(t.Context(), key, meta); err != nil {
		t.Fatal(err)
	}
	if meta.Name != "a" || meta.Labels["team"] != "a" || meta.Kind != "ConfigMap" {
		t.Errorf("metadata Get = %s %s labels %v, want ConfigMap a team=a", meta.Kind, meta.Name, meta.Labels)
	}

	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(configMapGVK)
	if err := f.reader.Get(t.Context(), key, u); err != nil {
		t.Fatal(err)
	}
	if k, _, _ := unstructured.NestedString(u.Object, "data", "k"); k != "2" || u.GetKind() != "ConfigMap" {
		t.Errorf("unstructured Get = kind %q data.k %q, want ConfigMap 2", u.GetKind(), k)
	}
}

func TestGetNotFound(t *testing.T) {
	f := newFixture(t)
	err := f.reader.Get(t.Context(), crclient.ObjectKey{Namespace: f.ns, Name: "missing"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing object: %v, want NotFound", err)
	}
}

// A Get of a cluster-scoped kind with a namespace drops the namespace, as
// controller-runtime's cached and uncached clients do; a List with one is
// refused, saying to list with none, where controller-runtime's cached
// client returns nothing and its uncached client everything.
func TestGetOfAClusterScopedKindWithANamespace(t *testing.T) {
	f := newFixture(t)
	var want, got corev1.Namespace
	if err := f.reader.Get(t.Context(), crclient.ObjectKey{Name: f.ns}, &want); err != nil {
		t.Fatalf("Get of a Namespace: %v", err)
	}
	if err := f.reader.Get(t.Context(), crclient.ObjectKey{Namespace: f.ns, Name: f.ns}, &got); err != nil {
		t.Fatalf("Get of a Namespace with a namespace: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get with a namespace (-without +with):\n%s", diff)
	}
	err := f.reader.List(t.Context(), &corev1.NamespaceList{}, crclient.InNamespace(f.ns))
	if err == nil || !strings.Contains(err.Error(), "list it with an empty namespace") {
		t.Errorf("List of Namespaces in a namespace = %v, want an error saying to list with an empty namespace", err)
	}
}

func TestListInEachForm(t *testing.T) {
	f := newFixture(t)
	teamA := []crclient.ListOption{crclient.InNamespace(f.ns), crclient.MatchingLabels{"team": "a"}}
	want := []string{"a", "b"} // sorted by name, whatever the store's order

	var typed corev1.ConfigMapList
	if err := f.reader.List(t.Context(), &typed, teamA...); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cm := range typed.Items {
		got = append(got, cm.Name)
		if cm.Kind != "ConfigMap" {
			t.Errorf("typed item %s has kind %q, want ConfigMap", cm.Name, cm.Kind)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("typed List (-want +got):\n%s", diff)
	}

	meta := &metav1.PartialObjectMetadataList{}
	meta.SetGroupVersionKind(configMapListGVK)
	if err := f.reader.List(t.Context(), meta, teamA...); err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, m := range meta.Items {
		got = append(got, m.Name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metadata List (-want +got):\n%s", diff)
	}

	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(configMapListGVK)
	if err := f.reader.List(t.Context(), u, teamA...); err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, item := range u.Items {
		got = append(got, item.GetName())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unstructured List (-want +got):\n%s", diff)
	}
}

func TestListByIndex(t *testing.T) {
	f := newFixture(t)
	selector, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []crclient.ListOption
		want []string
	}{
		{"in namespace", []crclient.ListOption{crclient.InNamespace(f.ns), crclient.MatchingFields{"k": "1"}}, []string{"b", "c"}},
		{"every namespace", []crclient.ListOption{crclient.MatchingFields{"k": "1"}}, []string{"b", "c"}},
		{"and labels", []crclient.ListOption{crclient.InNamespace(f.ns), crclient.MatchingFields{"k": "1"}, crclient.MatchingLabelsSelector{Selector: selector}}, []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var list corev1.ConfigMapList
			if err := f.reader.List(t.Context(), &list, tc.opts...); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, cm := range list.Items {
				got = append(got, cm.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListRefusesWhatTheCacheCannotAnswer(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name        string
		opts        []crclient.ListOption
		unsupported bool
		says        string
	}{
		{"limit", []crclient.ListOption{crclient.Limit(1)}, true, "client.Limit(1)"},
		{"continue", []crclient.ListOption{crclient.Continue("x")}, true, "continue"},
		{"not equal", []crclient.ListOption{crclient.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("k", "1")}}, true, "one index=value"},
		{"two fields", []crclient.ListOption{crclient.MatchingFields{"k": "1", "j": "2"}}, true, "one index=value"},
		{"no such index", []crclient.ListOption{crclient.MatchingFields{"metadata.name": "a"}}, false, `no index "metadata.name"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := f.reader.List(t.Context(), &corev1.ConfigMapList{}, tc.opts...)
			if err == nil {
				t.Fatal("List succeeded, want an error")
			}
			if errors.Is(err, errors.ErrUnsupported) != tc.unsupported || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("List: %v; want errors.ErrUnsupported %v and the message to say %q", err, tc.unsupported, tc.says)
			}
		})
	}
}

func TestUnregisteredKind(t *testing.T) {
	f := newFixture(t)
	key := crclient.ObjectKey{Namespace: f.ns, Name: "a"}
	secret := &unstructured.Unstructured{}
	secret.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Secret"})
	for _, tc := range []struct {
		name string
		read func() error
		says string
	}{
		{"typed", func() error { return f.reader.Get(t.Context(), key, &corev1.Secret{}) }, "cache.Register[*v1.Secret]"},
		{"unstructured", func() error { return f.reader.Get(t.Context(), key, secret) }, "cache.Unstructured"},
		{"list", func() error { return f.reader.List(t.Context(), &corev1.SecretList{}) }, "cache.Register[*v1.Secret]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.read()
			if !errors.Is(err, cache.ErrNotRegistered) || !strings.Contains(err.Error(), "/v1, Kind=Secret") || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("read of an unregistered kind: %v; want cache.ErrNotRegistered naming /v1, Kind=Secret and %s", err, tc.says)
			}
			// Reported even if the reader swallows the error, so that
			// a test of that reader fails (testenv.Main turns it on).
			got := f.takeUnregistered()
			if len(got) != 1 || !errors.Is(got[0], cache.ErrNotRegistered) || !strings.Contains(got[0].Error(), tc.says) || !strings.Contains(got[0].Stack, "TestUnregisteredKind") {
				t.Errorf("reports of the read: %v; want one naming %s and where it was read", got, tc.says)
			}
		})
	}
}

// Writes consult the cache (an Update of a cached copy, a skippable patch)
// on their own account: a kind nobody registered is written, and not
// reported as a read (the fixture fails a test on any report).
func TestWritesOfAnUnregisteredKindAreNoReads(t *testing.T) {
	f := newFixture(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "s"}}
	if err := f.writer.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	cl := cachedclient.New(f.reader, f.writer)
	secret.StringData = map[string]string{"k": "v"}
	if err := cl.Update(t.Context(), secret); err != nil {
		t.Fatalf("Update of a Secret, not cached: %v", err)
	}
	w, err := cachedclient.NewWriter(cl, cachedclient.WriterOptions{Controller: "t", Cache: f.reader})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Patch(t.Context(), secret, crclient.MergeFrom(secret.DeepCopy())); err != nil {
		t.Fatalf("empty patch of a Secret, not cached: %v", err)
	}
}

// A caller owns what Get and List return, even when asked not to copy
// (UnsafeDisableDeepCopy is ignored): modifying it leaves the cache as it
// was, and the mutation detector (on in every test, see TestMain) finds
// nothing.
func TestModifyingWhatWasReadLeavesTheCache(t *testing.T) {
	f := newFixture(t)
	cm := &corev1.ConfigMap{}
	if err := f.reader.Get(t.Context(), crclient.ObjectKey{Namespace: f.ns, Name: "a"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "changed"
	cm.Labels["team"] = "changed"
	var list corev1.ConfigMapList
	if err := f.reader.List(t.Context(), &list, crclient.InNamespace(f.ns), crclient.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		list.Items[i].Data["k"] = "changed"
		list.Items[i].Annotations = map[string]string{"x": "y"}
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(configMapGVK)
	if err := f.reader.Get(t.Context(), crclient.ObjectKey{Namespace: f.ns, Name: "b"}, meta); err != nil {
		t.Fatal(err)
	}
	meta.Labels["team"] = "changed"

	if err := f.cache.CheckMutations(); err != nil {
		t.Errorf("the cache was modified through what the reader returned: %v", err)
	}
	cached, err := f.lister.Get(f.ns, "a")
	if err != nil {
		t.Fatal(err)
	}
	if cached.Data["k"] != "2" || cached.Labels["team"] != "a" {
		t.Errorf("cached a = data %v labels %v, want k=2 team=a", cached.Data, cached.Labels)
	}
}

func TestCreateOrUpdateThroughTheCachedClient(t *testing.T) {
	f := newFixture(t)
	cl := cachedclient.New(f.reader, f.writer)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "made"}}
	set := func(v string) func() error {
		return func() error {
			cm.Data = map[string]string{"v": v}
			return nil
		}
	}
	op, err := controllerutil.CreateOrUpdate(t.Context(), cl, cm, set("1"))
	if err != nil || op != controllerutil.OperationResultCreated {
		t.Fatalf("first CreateOrUpdate = %q, %v; want created", op, err)
	}
	waitForCache(t, f.lister, f.ns, "made")

	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "made"}}
	op, err = controllerutil.CreateOrUpdate(t.Context(), cl, cm, set("2"))
	if err != nil || op != controllerutil.OperationResultUpdated {
		t.Fatalf("second CreateOrUpdate = %q, %v; want updated", op, err)
	}
	live := &corev1.ConfigMap{}
	if err := f.writer.Get(t.Context(), crclient.ObjectKeyFromObject(cm), live); err != nil {
		t.Fatal(err)
	}
	if live.Data["v"] != "2" {
		t.Errorf("on the API server after the update: data %v, want v=2", live.Data)
	}
}

func TestCreateOrPatchThroughTheCachedClient(t *testing.T) {
	f := newFixture(t)
	cl := cachedclient.New(f.reader, f.writer)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "a"}}
	op, err := controllerutil.CreateOrPatch(t.Context(), cl, cm, func() error {
		cm.Data["extra"] = "x" // cm holds what the cache held: k=2
		return nil
	})
	if err != nil || op != controllerutil.OperationResultUpdated {
		t.Fatalf("CreateOrPatch of a cached ConfigMap = %q, %v; want updated", op, err)
	}
	live := &corev1.ConfigMap{}
	if err := f.writer.Get(t.Context(), crclient.ObjectKeyFromObject(cm), live); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"k": "2", "extra": "x"}, live.Data); diff != "" {
		t.Errorf("on the API server after the patch (-want +got):\n%s", diff)
	}
	if err := f.cache.CheckMutations(); err != nil {
		t.Errorf("CreateOrPatch modified the cache: %v", err)
	}
}

// waitForCache waits until the cache holds namespace/name.
func waitForCache(t *testing.T, l *cache.Lister[*corev1.ConfigMap], namespace, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := l.Get(namespace, name)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("wait for the cache to hold %s/%s: %v", namespace, name, err)
	}
}
