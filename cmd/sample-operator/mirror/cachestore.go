package mirror

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// cacheStore is Store over opkit's cache.
type cacheStore struct {
	mirrors    *cache.Lister[*v1alpha1.Mirror]
	namespaces *cache.Lister[*corev1.Namespace]
	configMaps kindStore[*corev1.ConfigMap]
	secrets    kindStore[*corev1.Secret]
	// api reads sources and copies in full (Object, Fetch), uncached, as
	// the operator: only without Reconciler.ActAs.
	api client.Reader
}

var _ Store = (*cacheStore)(nil)

// kindStore caches the metadata of the ConfigMaps or Secrets of the
// cluster, in two parts, which no object is in both of: the copies
// (labelled LabelMirrorName), indexed by Mirror, and the rest, of which a
// few are sources. It holds no data: a source is read in full, as the
// Mirror's ServiceAccount, at each reconcile, and dropped after it.
type kindStore[T client.Object] struct {
	copies *cache.Lister[*metav1.PartialObjectMetadata]
	others *cache.Lister[*metav1.PartialObjectMetadata]
	// newObject returns an empty T, for Fetch.
	newObject func() T
}

func newKindStore[T client.Object](c *cache.Cache, kind string, newObject func() T) (kindStore[T], error) {
	k := kindStore[T]{newObject: newObject}
	isCopy, err := labels.NewRequirement(LabelMirrorName, selection.Exists, nil)
	if err != nil {
		return k, err
	}
	notCopy, err := labels.NewRequirement(LabelMirrorName, selection.DoesNotExist, nil)
	if err != nil {
		return k, err
	}
	gvk := corev1.SchemeGroupVersion.WithKind(kind)
	if k.copies, err = cache.Metadata(c, gvk, cache.TypeOptions{LabelSelector: labels.NewSelector().Add(*isCopy)}); err != nil {
		return k, err
	}
	if err := k.copies.AddIndex(IndexCopyOf, func(obj *metav1.PartialObjectMetadata) []string { return CopyIndex(obj) }); err != nil {
		return k, err
	}
	k.others, err = cache.Metadata(c, gvk, cache.TypeOptions{LabelSelector: labels.NewSelector().Add(*notCopy)})
	return k, err
}

// meta returns the metadata of namespace/name, a copy or not.
func (k kindStore[T]) meta(namespace, name string) (client.Object, error) {
	obj, err := k.copies.Get(namespace, name)
	if apierrors.IsNotFound(err) {
		return k.others.Get(namespace, name)
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// fetch reads namespace/name from the API server into a new object.
func (k kindStore[T]) fetch(ctx context.Context, api client.Reader, namespace, name string) (client.Object, error) {
	obj := k.newObject()
	if err := api.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// newCacheStore registers what the Mirror controller reads. mirrorOpts
// registers the Mirrors: in sharded mode the controller's own, split
// registration (Manager.ShardedTypeOptions), so a replica holds only its
// slots' Mirrors, and a source's change maps to those of them only (the
// other replicas map it to theirs).
// api reads copies in full, uncached (Store.Fetch).
func newCacheStore(c *cache.Cache, api client.Reader, mirrorOpts cache.TypeOptions) (*cacheStore, error) {
	s := &cacheStore{api: api}
	var err error
	if s.mirrors, err = cache.Register[*v1alpha1.Mirror](c, mirrorOpts); err != nil {
		return nil, err
	}
	if err := s.mirrors.AddIndex(IndexSource, MirrorSources); err != nil {
		return nil, err
	}
	if s.namespaces, err = cache.Register[*corev1.Namespace](c, cache.TypeOptions{}); err != nil {
		return nil, err
	}
	if s.configMaps, err = newKindStore(c, v1alpha1.KindConfigMap, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }); err != nil {
		return nil, err
	}
	if s.secrets, err = newKindStore(c, v1alpha1.KindSecret, func() *corev1.Secret { return &corev1.Secret{} }); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *cacheStore) Mirror(namespace, name string) (*v1alpha1.Mirror, error) {
	return s.mirrors.Get(namespace, name)
}

func (s *cacheStore) Namespaces(selector labels.Selector) ([]*corev1.Namespace, error) {
	return s.namespaces.List("", selector)
}

func (s *cacheStore) Object(ctx context.Context, kind, namespace, name string) (client.Object, error) {
	switch kind {
	case v1alpha1.KindConfigMap:
		return s.configMaps.fetch(ctx, s.api, namespace, name)
	case v1alpha1.KindSecret:
		return s.secrets.fetch(ctx, s.api, namespace, name)
	}
	return nil, unknownKind(kind)
}

func (s *cacheStore) Meta(kind, namespace, name string) (client.Object, error) {
	switch kind {
	case v1alpha1.KindConfigMap:
		return s.configMaps.meta(namespace, name)
	case v1alpha1.KindSecret:
		return s.secrets.meta(namespace, name)
	}
	return nil, unknownKind(kind)
}

func (s *cacheStore) Copies(kind, mirrorNamespace, mirrorName string) ([]client.Object, error) {
	key := MirrorKey(mirrorNamespace, mirrorName)
	switch kind {
	case v1alpha1.KindConfigMap:
		return objects(s.configMaps.copies.ByIndex(IndexCopyOf, key))
	case v1alpha1.KindSecret:
		return objects(s.secrets.copies.ByIndex(IndexCopyOf, key))
	}
	return nil, unknownKind(kind)
}

func (s *cacheStore) Fetch(ctx context.Context, kind, namespace, name string) (client.Object, error) {
	switch kind {
	case v1alpha1.KindConfigMap:
		return s.configMaps.fetch(ctx, s.api, namespace, name)
	case v1alpha1.KindSecret:
		return s.secrets.fetch(ctx, s.api, namespace, name)
	}
	return nil, unknownKind(kind)
}

func unknownKind(kind string) error { return fmt.Errorf("mirror: unknown source kind %q", kind) }

func objects[T client.Object](items []T, err error) ([]client.Object, error) {
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, len(items))
	for i, o := range items {
		out[i] = o
	}
	return out, nil
}

// mirrorsOf maps the metadata of a ConfigMap or Secret (by kind)
// to the Mirrors it is the source of, and to the Mirror it is a copy of.
func (s *cacheStore) mirrorsOf(kind string) func(*metav1.PartialObjectMetadata) []reconcile.Request {
	return func(obj *metav1.PartialObjectMetadata) []reconcile.Request {
		var out []reconcile.Request
		ms, _ := s.mirrors.ByIndex(IndexSource, SourceKey(kind, obj.GetNamespace(), obj.GetName()))
		for _, m := range ms {
			out = append(out, reconcile.Request{Namespace: m.Namespace, Name: m.Name})
		}
		if l := obj.GetLabels(); CopyOf(obj) != "" {
			out = append(out, reconcile.Request{Namespace: l[LabelMirrorNamespace], Name: l[LabelMirrorName]})
		}
		return out
	}
}
