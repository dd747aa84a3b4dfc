package mirror_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror/mirrortest"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// A namespace's owner may adopt a copy by removing its Mirror's labels.
// When the Mirror stops matching that namespace at that moment, a
// reconcile whose cache has not seen the adoption yet still lists the
// object as a copy: its delete must be refused, since the object changed
// since the cache saw it, and the reconcile after leaves it alone.
func TestAdoptedCopySurvivesAStaleCache(t *testing.T) {
	w := users(t)
	a := w.namespace(map[string]string{"team": "a"})
	w.configMap(w.home, "cfg", map[string]string{"k": "v"})
	w.mirror("cfg", v1alpha1.KindConfigMap, "cfg", w.selecting(map[string]string{"team": "a"}))
	store := &apiStore{cl: w.cl}
	r := &mirror.Reconciler{Store: store, Client: client.WithFieldOwner(w.cl, "mirror")}
	req := reconcile.Request{Namespace: w.home, Name: "cfg"}
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatalf("first reconcile: %v", err)
	}
	if err := w.hasData(a, "cfg", map[string]string{"k": "v"})(); err != nil {
		t.Fatal(err)
	}
	var err error
	if store.stale, err = store.Copies(v1alpha1.KindConfigMap, w.home, "cfg"); err != nil || len(store.stale) != 1 {
		t.Fatalf("copies before the adoption: %v, %v", store.stale, err)
	}

	adopt := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(
		`{"metadata":{"labels":{%q:null,%q:null}},"data":{"k":"mine"}}`, mirror.LabelMirrorNamespace, mirror.LabelMirrorName)))
	if err := w.cl.Patch(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "cfg"}}, adopt); err != nil {
		t.Fatal(err)
	}
	w.relabel(a, map[string]string{"team": "b"})

	_, err = r.Reconcile(t.Context(), req)
	if err := w.hasData(a, "cfg", map[string]string{"k": "mine"})(); err != nil {
		t.Fatalf("a reconcile from a cache that had not seen the adoption deleted the adopted object: %v", err)
	}
	if !apierrors.IsConflict(err) {
		t.Errorf("reconcile from the stale cache = %v, want a Conflict, retried", err)
	}

	store.stale = nil
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Errorf("reconcile once the cache has seen the adoption: %v", err)
	}
	if err := w.hasData(a, "cfg", map[string]string{"k": "mine"})(); err != nil {
		t.Errorf("the adopted object: %v", err)
	}
}

// users is a world with no operator running: the test drives a Reconciler
// itself.
func users(t *testing.T) *world {
	t.Helper()
	cl, err := client.New(env.Config(), client.Options{Scheme: newScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	home := env.Namespace(t)
	// Later tests' operators watch every namespace, and reconcile the
	// Mirrors left here as their ServiceAccount, which may copy.
	if err := mirrortest.GrantCopier(t.Context(), env.Client(), home, v1alpha1.DefaultServiceAccountName); err != nil {
		t.Fatal(err)
	}
	return &world{t: t, cl: cl, home: home, label: map[string]string{"mirror-test": home}}
}

// apiStore is a mirror.Store that reads the API server, uncached, except
// that it answers Copies with stale when that is set: a cache that has not
// seen the latest writes. It serves ConfigMap Mirrors.
type apiStore struct {
	cl    client.Client
	stale []client.Object
}

var _ mirror.Store = (*apiStore)(nil)

func (s *apiStore) Mirror(namespace, name string) (*v1alpha1.Mirror, error) {
	m := &v1alpha1.Mirror{}
	return m, s.cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, m)
}

func (s *apiStore) Namespaces(selector labels.Selector) ([]*corev1.Namespace, error) {
	list := &corev1.NamespaceList{}
	if err := s.cl.List(context.Background(), list, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	out := make([]*corev1.Namespace, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (s *apiStore) Object(ctx context.Context, kind, namespace, name string) (client.Object, error) {
	return s.Fetch(ctx, kind, namespace, name)
}

func (s *apiStore) Meta(kind, namespace, name string) (client.Object, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return obj, s.cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj)
}

func (s *apiStore) Copies(kind, mirrorNamespace, mirrorName string) ([]client.Object, error) {
	if kind != v1alpha1.KindConfigMap {
		return nil, nil
	}
	if s.stale != nil {
		return s.stale, nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	err := s.cl.List(context.Background(), list, client.MatchingLabels{mirror.LabelMirrorNamespace: mirrorNamespace, mirror.LabelMirrorName: mirrorName})
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (s *apiStore) Fetch(ctx context.Context, kind, namespace, name string) (client.Object, error) {
	if kind != v1alpha1.KindConfigMap {
		return nil, fmt.Errorf("apiStore serves ConfigMaps, not %s", kind)
	}
	cm := &corev1.ConfigMap{}
	return cm, s.cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm)
}
