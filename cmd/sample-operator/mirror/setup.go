package mirror

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/cache"
	opkitclient "github.com/opkit-dev/opkit/pkg/client"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// Setup registers what the Mirror controller reads with the manager's
// cache, and adds the controller to the manager. The manager's scheme must
// hold v1alpha1.
func Setup(m *manager.Manager, opts controller.Options[reconcile.Request]) (*controller.Controller[reconcile.Request], error) {
	s, err := newCacheStore(m.Cache())
	if err != nil {
		return nil, fmt.Errorf("set up the mirror controller: %w", err)
	}
	rec, err := m.EventRecorder("mirror")
	if err != nil {
		return nil, fmt.Errorf("set up the mirror controller: %w", err)
	}
	// The writer names the controller as the field owner of its writes,
	// skips patches that change nothing and counts writes in
	// opkit_client_writes_total; the manager's client underneath records
	// them for read-your-writes.
	w, err := opkitclient.NewWriter(m.CachedClient(), opkitclient.WriterOptions{
		Controller: "mirror", Cache: opkitclient.NewReader(m.Cache()), Registerer: m.Registry(),
	})
	if err != nil {
		return nil, fmt.Errorf("set up the mirror controller: %w", err)
	}
	r := &Reconciler{Store: s, Client: w, Recorder: rec}
	return manager.NewController(m, "mirror", r,
		manager.For[*v1alpha1.Mirror](source.Or(
			source.GenerationChanged[*v1alpha1.Mirror](),
			source.PredicateFunc[*v1alpha1.Mirror](deletionStarted),
		)),
		manager.Watches(source.EnqueueMapped(typed[*corev1.ConfigMap](s.mirrorsOf))),
		manager.Watches(source.EnqueueMapped(typed[*corev1.Secret](s.mirrorsOf))),
		manager.Watches(source.EnqueueMapped(s.mirrorsSelecting)),
		manager.WithOptions(opts),
	)
}

// typed adapts a map function over any object to objects of type T.
func typed[T client.Object](fn func(client.Object) []reconcile.Request) func(T) []reconcile.Request {
	return func(obj T) []reconcile.Request { return fn(obj) }
}

func deletionStarted(e source.Event[*v1alpha1.Mirror]) bool {
	return e.Type == source.Update && e.Old.DeletionTimestamp == nil && e.Object.DeletionTimestamp != nil
}

// cacheStore is Store over opkit's cache.
type cacheStore struct {
	mirrors    *cache.Lister[*v1alpha1.Mirror]
	namespaces *cache.Lister[*corev1.Namespace]
	configMaps *cache.Lister[*corev1.ConfigMap]
	secrets    *cache.Lister[*corev1.Secret]
}

var _ Store = (*cacheStore)(nil)

func newCacheStore(c *cache.Cache) (*cacheStore, error) {
	s := &cacheStore{}
	var err error
	if s.mirrors, err = cache.For[*v1alpha1.Mirror](c, cache.TypeOptions{}); err != nil {
		return nil, err
	}
	if err := s.mirrors.AddIndex(IndexSource, MirrorSources); err != nil {
		return nil, err
	}
	if s.namespaces, err = cache.For[*corev1.Namespace](c, cache.TypeOptions{}); err != nil {
		return nil, err
	}
	if s.configMaps, err = cache.For[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
		return nil, err
	}
	if err := s.configMaps.AddIndex(IndexCopyOf, func(cm *corev1.ConfigMap) []string { return CopyIndex(cm) }); err != nil {
		return nil, err
	}
	if s.secrets, err = cache.For[*corev1.Secret](c, cache.TypeOptions{}); err != nil {
		return nil, err
	}
	if err := s.secrets.AddIndex(IndexCopyOf, func(s *corev1.Secret) []string { return CopyIndex(s) }); err != nil {
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

func (s *cacheStore) Object(kind, namespace, name string) (client.Object, error) {
	switch kind {
	case v1alpha1.KindConfigMap:
		return s.configMaps.Get(namespace, name)
	case v1alpha1.KindSecret:
		return s.secrets.Get(namespace, name)
	}
	return nil, fmt.Errorf("mirror: unknown source kind %q", kind)
}

func (s *cacheStore) Copies(kind, mirrorNamespace, mirrorName string) ([]client.Object, error) {
	key := MirrorKey(mirrorNamespace, mirrorName)
	switch kind {
	case v1alpha1.KindConfigMap:
		return objects(s.configMaps.ByIndex(IndexCopyOf, key))
	case v1alpha1.KindSecret:
		return objects(s.secrets.ByIndex(IndexCopyOf, key))
	}
	return nil, fmt.Errorf("mirror: unknown source kind %q", kind)
}

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

// mirrorsOf maps a ConfigMap or Secret to the Mirrors it is the source of,
// and to the Mirror it is a copy of.
func (s *cacheStore) mirrorsOf(obj client.Object) []reconcile.Request {
	var out []reconcile.Request
	kind := v1alpha1.KindConfigMap
	if _, ok := obj.(*corev1.Secret); ok {
		kind = v1alpha1.KindSecret
	}
	ms, _ := s.mirrors.ByIndex(IndexSource, SourceKey(kind, obj.GetNamespace(), obj.GetName()))
	for _, m := range ms {
		out = append(out, reconcile.Request{Namespace: m.Namespace, Name: m.Name})
	}
	if l := obj.GetLabels(); CopyOf(obj) != "" {
		out = append(out, reconcile.Request{Namespace: l[LabelMirrorNamespace], Name: l[LabelMirrorName]})
	}
	return out
}

// mirrorsSelecting maps a namespace to the Mirrors whose selector matches
// it.
func (s *cacheStore) mirrorsSelecting(ns *corev1.Namespace) []reconcile.Request {
	ms, _ := s.mirrors.List("", nil)
	var out []reconcile.Request
	for _, m := range ms {
		sel, err := metav1.LabelSelectorAsSelector(&m.Spec.NamespaceSelector)
		if err == nil && sel.Matches(labels.Set(ns.Labels)) {
			out = append(out, reconcile.Request{Namespace: m.Namespace, Name: m.Name})
		}
	}
	return out
}
