package cachetest_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/cache/cachetest"
)

func cm(ns, name string, lbls map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
}

// keys returns namespace/name of each object, in order.
func keys[T cache.Object](objs []T) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetNamespace() + "/" + o.GetName()
	}
	return out
}

func newStore[T cache.Object](t *testing.T, objs ...T) *cachetest.Store[T] {
	t.Helper()
	s, err := cachetest.New(cachetest.Options{}, objs...)
	if err != nil {
		t.Fatal(err)
	}
	cachetest.CheckMutationsAtCleanup(t, s)
	return s
}

func TestGetReturnsTheStoredCopy(t *testing.T) {
	mine := cm("a", "x", map[string]string{"app": "web"})
	l := cachetest.NewLister(t, mine)
	got, err := l.Get("a", "x")
	if err != nil {
		t.Fatal(err)
	}
	if got == mine {
		t.Error("Get returned the caller's object, want the store's copy")
	}
	again, _ := l.Get("a", "x")
	if got != again {
		t.Error("two Gets returned different pointers: the Lister copies, want zero-copy")
	}
	mine.Labels["app"] = "changed" // the caller's object stays the caller's
	if got.Labels["app"] != "web" {
		t.Errorf("stored label = %q after the caller changed its own object, want web", got.Labels["app"])
	}
	if !l.HasSynced() {
		t.Error("HasSynced = false, want true: a store is synced from the start")
	}
}

func TestGetNotFound(t *testing.T) {
	l := cachetest.NewLister(t, cm("a", "x", nil))
	_, err := l.Get("a", "missing")
	if !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a missing object = %v, want NotFound", err)
	}
	if want := `configmaps "missing" not found`; err.Error() != want {
		t.Errorf("error = %q, want %q (the cache's)", err, want)
	}
	if _, err := l.Get("", "x"); err == nil || !strings.Contains(err.Error(), "namespaced") {
		t.Errorf("Get without a namespace = %v, want an error saying the kind is namespaced", err)
	}
}

func TestListIsSortedAndFiltered(t *testing.T) {
	l := cachetest.NewLister(t,
		cm("b", "y", map[string]string{"app": "web"}),
		cm("a", "z", nil),
		cm("b", "a", map[string]string{"app": "db"}),
		cm("a", "b", map[string]string{"app": "web"}),
	)
	tests := []struct {
		ns       string
		selector labels.Selector
		want     []string
	}{
		{"", nil, []string{"a/b", "a/z", "b/a", "b/y"}},
		{"b", nil, []string{"b/a", "b/y"}},
		{"", labels.SelectorFromSet(labels.Set{"app": "web"}), []string{"a/b", "b/y"}},
		{"c", nil, []string{}},
	}
	for _, tt := range tests {
		got, err := l.List(tt.ns, tt.selector)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, keys(got)); diff != "" {
			t.Errorf("List(%q, %v) (-want +got):\n%s", tt.ns, tt.selector, diff)
		}
	}
}

func byApp(c *corev1.ConfigMap) []string {
	if a := c.Labels["app"]; a != "" {
		return []string{a}
	}
	return nil
}

// Indexes added after the objects index them too: a store has no Start.
func TestIndexes(t *testing.T) {
	l := cachetest.NewLister(t,
		cm("b", "y", map[string]string{"app": "web"}),
		cm("a", "z", map[string]string{"app": "web"}),
		cm("a", "b", map[string]string{"app": "db"}),
	)
	if _, err := l.ByIndex("app", "web"); err == nil || !strings.Contains(err.Error(), `no index "app"`) {
		t.Errorf("ByIndex before AddIndex = %v, want an error naming the missing index", err)
	}
	if err := l.AddIndex("app", byApp); err != nil {
		t.Fatal(err)
	}
	if err := l.AddIndex("app", byApp); err == nil {
		t.Error("adding index app twice succeeded, want an error")
	}
	got, err := l.ByIndex("app", "web")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a/z", "b/y"}, keys(got)); diff != "" {
		t.Errorf("ByIndex (-want +got):\n%s", diff)
	}
	got, err = l.ByIndexInNamespace("b", "app", "web")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b/y"}, keys(got)); diff != "" {
		t.Errorf("ByIndexInNamespace (-want +got):\n%s", diff)
	}
	if _, err := l.ByIndexInNamespace("", "app", "web"); err == nil {
		t.Error("ByIndexInNamespace without a namespace succeeded, want an error")
	}
}

func owned(ns, name string, owner types.UID) *corev1.ConfigMap {
	c := cm(ns, name, nil)
	yes := true
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "owner", UID: owner, Controller: &yes}}
	return c
}

func TestControlledBy(t *testing.T) {
	owner := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "owner", UID: "uid-1"}}
	l := cachetest.NewLister(t,
		owned("a", "child-2", "uid-1"),
		owned("a", "child-1", "uid-1"),
		owned("a", "other", "uid-2"),
		owned("b", "same-uid-elsewhere", "uid-1"),
		cm("a", "orphan", nil),
	)
	// No index to add first: the first ControlledBy adds it, over what the
	// store holds already, and later calls read it.
	for range 2 {
		got, err := l.ControlledBy(owner)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a/child-1", "a/child-2"}, keys(got)); diff != "" {
			t.Errorf("ControlledBy (-want +got):\n%s", diff)
		}
	}
}

func TestAddUpdateDelete(t *testing.T) {
	s := newStore(t, cm("a", "x", map[string]string{"app": "web"}))
	l := s.Lister()
	if err := l.AddIndex("app", byApp); err != nil {
		t.Fatal(err)
	}
	before, _ := l.List("a", nil) // remembered, sorted: must not be served stale
	if diff := cmp.Diff([]string{"a/x"}, keys(before)); diff != "" {
		t.Fatalf("List (-want +got):\n%s", diff)
	}

	if err := s.Add(cm("a", "x", nil)); !apierrors.IsAlreadyExists(err) {
		t.Errorf("Add of a stored object = %v, want AlreadyExists", err)
	}
	if err := s.Update(cm("a", "new", nil)); !apierrors.IsNotFound(err) {
		t.Errorf("Update of a missing object = %v, want NotFound", err)
	}
	if err := s.Delete("a", "new"); !apierrors.IsNotFound(err) {
		t.Errorf("Delete of a missing object = %v, want NotFound", err)
	}

	if err := s.Add(cm("a", "w", map[string]string{"app": "web"})); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(cm("a", "x", map[string]string{"app": "db"})); err != nil {
		t.Fatal(err)
	}
	got, _ := l.List("a", nil)
	if diff := cmp.Diff([]string{"a/w", "a/x"}, keys(got)); diff != "" {
		t.Errorf("List after Add (-want +got):\n%s", diff)
	}
	if x, _ := l.Get("a", "x"); x.Labels["app"] != "db" {
		t.Errorf("label after Update = %q, want db", x.Labels["app"])
	}
	web, _ := l.ByIndex("app", "web")
	if diff := cmp.Diff([]string{"a/w"}, keys(web)); diff != "" {
		t.Errorf("ByIndex after Update (-want +got):\n%s", diff)
	}

	if err := s.Delete("a", "w"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get("a", "w"); !apierrors.IsNotFound(err) {
		t.Errorf("Get after Delete = %v, want NotFound", err)
	}
	if web, _ := l.ByIndex("app", "web"); len(web) != 0 {
		t.Errorf("ByIndex after Delete = %v, want none", keys(web))
	}
}

func TestResourceVersions(t *testing.T) {
	withRV := cm("a", "given", nil)
	withRV.ResourceVersion = "10"
	s := newStore(t, cm("a", "first", nil), withRV, cm("a", "third", nil))
	l := s.Lister()
	for name, want := range map[string]string{"first": "1", "given": "10", "third": "11"} {
		got, err := l.Get("a", name)
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != want {
			t.Errorf("resourceVersion of %s = %q, want %q", name, got.ResourceVersion, want)
		}
	}
	if withRV.ResourceVersion != "10" || withRV.UID != "" {
		t.Errorf("the caller's object was changed: %+v", withRV.ObjectMeta)
	}
}

func TestClusterScoped(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	s := newStore(t, ns)
	if _, err := s.Lister().Get("", "team-a"); err != nil {
		t.Errorf("Get of a namespace = %v", err)
	}
	bad := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "team-b"}}
	if err := s.Add(bad); err == nil || !strings.Contains(err.Error(), "cluster-scoped") {
		t.Errorf("Add of a namespace with a namespace = %v, want an error saying the kind is cluster-scoped", err)
	}
	if _, err := cachetest.New(cachetest.Options{}, cm("", "no-namespace", nil)); err == nil || !strings.Contains(err.Error(), "namespaced") {
		t.Errorf("New with a ConfigMap without a namespace = %v, want an error", err)
	}
}

// A cluster-scoped custom kind needs a mapper that says so.
func TestCustomMapper(t *testing.T) {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeRoot)
	s, err := cachetest.New(cachetest.Options{Mapper: m}, cm("", "global", nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lister().Get("", "global"); err != nil {
		t.Errorf("Get = %v", err)
	}
}

func TestDuplicateObjects(t *testing.T) {
	_, err := cachetest.New(cachetest.Options{}, cm("a", "x", nil), cm("a", "x", nil))
	if !apierrors.IsAlreadyExists(err) || !strings.Contains(err.Error(), "a/x") {
		t.Errorf("New with one object twice = %v, want AlreadyExists naming a/x", err)
	}
}

func TestModifiedObjectIsReported(t *testing.T) {
	s, err := cachetest.New(cachetest.Options{}, cm("a", "x", map[string]string{"app": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.Lister().Get("a", "x")
	got.Labels = map[string]string{"app": "changed"} // what no reader may do
	var me *cache.MutationError
	if err := s.CheckMutations(); !errors.As(err, &me) || me.Name != "x" {
		t.Fatalf("CheckMutations after a modification = %v, want a *MutationError naming x", err)
	}
}

func TestWaitForInMemory(t *testing.T) {
	s := newStore(t, cm("a", "x", nil)) // resourceVersion 1
	l := s.Lister()
	later := cm("a", "x", nil)
	later.ResourceVersion = "7"
	if err := s.Update(later); err != nil {
		t.Fatal(err)
	}
	older := cm("a", "x", nil)
	older.ResourceVersion = "5"
	if err := l.WaitFor(t.Context(), older); err != nil {
		t.Errorf("WaitFor an older version = %v, want nil", err)
	}
	newer := cm("a", "x", nil)
	newer.ResourceVersion = "12"
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := l.WaitFor(ctx, newer)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor with an ended context = %v, want it to wrap context.Canceled", err)
	}
	for _, want := range []string{"a/x", "resourceVersion 12", "resourceVersion 7"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("WaitFor error = %v, want it to name %q", err, want)
		}
	}
	if err := l.WaitFor(t.Context(), cm("a", "x", nil)); err == nil {
		t.Error("WaitFor an object without a resourceVersion succeeded, want an error")
	}
}

func TestEventHandlersAreAccepted(t *testing.T) {
	l := cachetest.NewLister(t, cm("a", "x", nil))
	if _, err := l.AddEventHandler(toolscache.ResourceEventHandlerFuncs{}); err != nil {
		t.Errorf("AddEventHandler = %v, want nil", err)
	}
}

// Reads and writes may run at once, as a reconciler's workers and a test
// changing the store do; -race checks it.
func TestConcurrentReadsAndWrites(t *testing.T) {
	s := newStore(t, cm("a", "x", map[string]string{"app": "web"}))
	l := s.Lister()
	if err := l.AddIndex("app", byApp); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			name := "n" + strconv.Itoa(i)
			if err := s.Add(cm("a", name, map[string]string{"app": "web"})); err != nil {
				t.Error(err)
				return
			}
			if i%2 == 0 {
				if err := s.Delete("a", name); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for range 100 {
		if _, err := l.List("a", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := l.ByIndexInNamespace("a", "app", "web"); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	got, _ := l.List("a", nil)
	if len(got) != 51 {
		t.Errorf("List after 100 adds and 50 deletes = %d objects, want 51", len(got))
	}
}

func TestNewStaticRefusesWhatItCannotServe(t *testing.T) {
	if _, err := cache.NewStore(cacheaccess.Key{}, reflect.TypeFor[*corev1.ConfigMap](), cacheaccess.StoreOptions{}); err == nil || !strings.Contains(err.Error(), "Mapper") {
		t.Errorf("NewStore without a mapper = %v, want an error naming StoreOptions.Mapper", err)
	}
	if _, err := cachetest.New[*metav1.PartialObjectMetadata](cachetest.Options{}); err == nil || !strings.Contains(err.Error(), "typed") {
		t.Errorf("New of metadata-only objects = %v, want an error saying only typed objects are supported", err)
	}
	m := meta.NewDefaultRESTMapper(nil) // knows no kinds
	if _, err := cachetest.New[*corev1.ConfigMap](cachetest.Options{Mapper: m}); err == nil || !strings.Contains(err.Error(), "ConfigMap") {
		t.Errorf("New with a mapper that does not know the kind = %v, want an error naming it", err)
	}
}

// recorder is a testing.TB that records failures and cleanups instead of
// acting on them, to test what NewLister does to the test it is given.
type recorder struct {
	testing.TB
	failures []string
	cleanups []func()
}

func (r *recorder) Helper()          {}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, a ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, a...))
}

func TestNewListerFailsATestThatModifiesWhatItRead(t *testing.T) {
	r := &recorder{TB: t}
	l := cachetest.NewLister(r, cm("a", "x", map[string]string{"app": "web"}))
	got, _ := l.Get("a", "x")
	got.Labels = map[string]string{"app": "changed"}
	for _, f := range r.cleanups {
		f()
	}
	if len(r.failures) != 1 || !strings.Contains(r.failures[0], "a/x") || !strings.Contains(r.failures[0], "DeepCopy") {
		t.Errorf("failures at cleanup = %q, want one naming a/x and saying to DeepCopy", r.failures)
	}
}
