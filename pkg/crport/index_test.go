package crport_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/crport"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// An operator's index code, written for controller-runtime's field
// indexer, runs unchanged on opkit's cache, and the cached client's List
// with MatchingFields reads it within a namespace or across the cached
// ones, as on controller-runtime: for an index added before the manager
// starts and for one added after.
func TestFieldIndexer(t *testing.T) {
	ns1, ns2 := env.Namespace(t), env.Namespace(t)
	mgr, err := manager.New(env.Config(), manager.Options{
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "0"},
		Cache: cache.Options{
			Namespaces:        []string{ns1, ns2},
			Mutations:         cache.MutationOptions{OnMutation: testenv.ReportMutations(t)},
			UnregisteredReads: cache.UnregisteredReadOptions{Fail: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	const ownerField = ".data.owner" // controller-runtime's naming: a field path
	byOwner := func(o crclient.Object) []string {
		if owner := o.(*corev1.ConfigMap).Data["owner"]; owner != "" {
			return []string{owner}
		}
		return nil
	}
	indexer := crport.FieldIndexer(mgr)
	if err := indexer.IndexField(t.Context(), &corev1.ConfigMap{}, ownerField, byOwner); err != nil {
		t.Fatal(err)
	}
	if err := indexer.IndexField(t.Context(), &corev1.ConfigMap{}, ownerField, byOwner); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("IndexField of a field indexed already = %v, want an error that says so", err)
	}
	type notInScheme struct{ corev1.ConfigMap }
	if err := indexer.IndexField(t.Context(), &notInScheme{}, "x", byOwner); err == nil || !strings.Contains(err.Error(), "Options.Scheme") {
		t.Errorf("IndexField of a type outside the scheme = %v, want an error naming Options.Scheme", err)
	}
	// A controller's own registration of the kind shares the informers.
	configMaps, err := cache.Register[*corev1.ConfigMap](mgr.Cache(), cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}

	cl := mgr.UncachedClient()
	for _, o := range []crclient.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns1, Name: "a"}, Data: map[string]string{"owner": "web"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns1, Name: "b"}, Data: map[string]string{"owner": "db"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, Name: "c"}, Data: map[string]string{"owner": "web"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns1, Name: "s"}, Type: corev1.SecretTypeOpaque},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, Name: "t"}, Type: "example.com/token"},
	} {
		if err := cl.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager Start: %v", err)
		}
	})

	names := func(list crclient.ObjectList, opts ...crclient.ListOption) []string {
		t.Helper()
		if err := mgr.CachedClient().List(t.Context(), list, opts...); err != nil {
			t.Fatalf("List %v: %v", opts, err)
		}
		var got []string
		items, err := apimeta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			m, _ := apimeta.Accessor(o)
			got = append(got, m.GetNamespace()+"/"+m.GetName())
		}
		slices.Sort(got)
		return got
	}
	want := func(got []string, want ...string) {
		t.Helper()
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("listed %q, want %q", got, want)
		}
	}
	synced := func(ready func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) { return ready(), nil }); err != nil {
			t.Fatalf("the cache did not sync: %v", err)
		}
	}
	synced(func() bool { l, _ := configMaps.List(ns2, labels.Everything()); return len(l) > 0 })
	want(names(&corev1.ConfigMapList{}, crclient.InNamespace(ns1), crclient.MatchingFields{ownerField: "web"}), ns1+"/a")
	want(names(&corev1.ConfigMapList{}, crclient.MatchingFields{ownerField: "web"}), ns1+"/a", ns2+"/c")
	want(names(&corev1.ConfigMapList{}, crclient.MatchingFields{ownerField: "nobody"}))
	if got, err := configMaps.ByIndexInNamespace(ns1, ownerField, "db"); err != nil || len(got) != 1 || got[0].Name != "b" {
		t.Errorf("the typed Lister's ByIndexInNamespace = %v, %v; want b: one index over shared informers", got, err)
	}

	// After the manager started: the kind is registered and indexed then.
	if err := indexer.IndexField(t.Context(), &corev1.Secret{}, "type", func(o crclient.Object) []string {
		return []string{string(o.(*corev1.Secret).Type)}
	}); err != nil {
		t.Fatal(err)
	}
	synced(func() bool {
		var l corev1.SecretList
		return mgr.CachedClient().List(t.Context(), &l, crclient.MatchingFields{"type": "example.com/token"}) == nil && len(l.Items) == 1
	})
	want(names(&corev1.SecretList{}, crclient.MatchingFields{"type": "example.com/token"}), ns2+"/t")
	want(names(&corev1.SecretList{}, crclient.InNamespace(ns2), crclient.MatchingFields{"type": string(corev1.SecretTypeOpaque)}))
}

// MustEventRecorder is the manager's recorder, and panics with the
// manager's reason on a name the API server would refuse.
func TestMustEventRecorder(t *testing.T) {
	mgr, err := manager.New(env.Config(), manager.Options{
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := crport.MustEventRecorder(mgr, "guest"); r == nil {
		t.Error("MustEventRecorder(guest) = nil")
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "qualified name") {
			t.Errorf("MustEventRecorder of a name the API server refuses: recovered %v, want a panic that says why", p)
		}
	}()
	crport.MustEventRecorder(mgr, "not a name!")
}
