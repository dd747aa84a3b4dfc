package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// store is mirror.Store over controller-runtime's cache, read the way
// controller-runtime users read it: through a client.Reader, which returns
// deep copies, with field indexes registered through client.FieldIndexer.
//
// With configMapsOnly it never reads a Secret, as any read of a type
// starts an informer of it in controller-runtime's cache: it has no
// Secret copies (it makes none), and a Secret source is refused.
type store struct {
	r              client.Reader
	configMapsOnly bool
}

var _ mirror.Store = store{}

// errConfigMapsOnly refuses a Secret source in configMapsOnly mode.
var errConfigMapsOnly = errors.New("crmirror --configmaps-only mirrors ConfigMap sources only: it watches no Secret")

// indexFields registers the indexes s reads by; call it before the
// manager starts. An index starts an informer of its type.
func (s store) indexFields(ctx context.Context, fi client.FieldIndexer) error {
	if err := fi.IndexField(ctx, &v1alpha1.Mirror{}, mirror.IndexSource, func(o client.Object) []string {
		return mirror.MirrorSources(o.(*v1alpha1.Mirror))
	}); err != nil {
		return fmt.Errorf("index Mirrors by source: %w", err)
	}
	objs := []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}}
	if s.configMapsOnly {
		objs = objs[:1]
	}
	for _, obj := range objs {
		if err := fi.IndexField(ctx, obj, mirror.IndexCopyOf, mirror.CopyIndex); err != nil {
			return fmt.Errorf("index %T by Mirror: %w", obj, err)
		}
	}
	return nil
}

// The Store's reads other than Object take no context: they are from
// memory and cannot block on the network once the cache has synced.

func (s store) Mirror(namespace, name string) (*v1alpha1.Mirror, error) {
	m := &v1alpha1.Mirror{}
	if err := s.r.Get(context.TODO(), client.ObjectKey{Namespace: namespace, Name: name}, m); err != nil {
		return nil, err
	}
	return m, nil
}

func (s store) Namespaces(selector labels.Selector) ([]*corev1.Namespace, error) {
	var l corev1.NamespaceList
	if err := s.r.List(context.TODO(), &l, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	out := make([]*corev1.Namespace, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

func (s store) Object(ctx context.Context, kind, namespace, name string) (client.Object, error) {
	if s.configMapsOnly && kind == v1alpha1.KindSecret {
		return nil, errConfigMapsOnly
	}
	obj, err := newObject(kind)
	if err != nil {
		return nil, err
	}
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// Meta returns the whole object: controller-runtime's cache holds copies
// in full, as its users cache them.
func (s store) Meta(kind, namespace, name string) (client.Object, error) {
	return s.Object(context.TODO(), kind, namespace, name)
}

// Fetch reads the cache, which holds copies in full; the reconciler calls
// it only for a copy that Meta returned as metadata, which this store
// never does.
func (s store) Fetch(ctx context.Context, kind, namespace, name string) (client.Object, error) {
	return s.Object(ctx, kind, namespace, name)
}

func (s store) Copies(kind, mirrorNamespace, mirrorName string) ([]client.Object, error) {
	match := client.MatchingFields{mirror.IndexCopyOf: mirror.MirrorKey(mirrorNamespace, mirrorName)}
	switch kind {
	case v1alpha1.KindConfigMap:
		var l corev1.ConfigMapList
		if err := s.r.List(context.TODO(), &l, match); err != nil {
			return nil, err
		}
		return pointers(l.Items), nil
	case v1alpha1.KindSecret:
		if s.configMapsOnly {
			return nil, nil // it makes no Secret copies
		}
		var l corev1.SecretList
		if err := s.r.List(context.TODO(), &l, match); err != nil {
			return nil, err
		}
		return pointers(l.Items), nil
	}
	return nil, fmt.Errorf("mirror: unknown source kind %q", kind)
}

func newObject(kind string) (client.Object, error) {
	switch kind {
	case v1alpha1.KindConfigMap:
		return &corev1.ConfigMap{}, nil
	case v1alpha1.KindSecret:
		return &corev1.Secret{}, nil
	}
	return nil, fmt.Errorf("mirror: unknown source kind %q", kind)
}

// pointers returns the addresses of items' elements, as client.Objects.
func pointers[T any, PT interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// mirrorsOf maps a ConfigMap or Secret to the Mirrors it is the source of,
// and to the Mirror it is a copy of, as mirror's Setup does.
func (s store) mirrorsOf(ctx context.Context, obj client.Object) []ctrl.Request {
	kind := v1alpha1.KindConfigMap
	if _, ok := obj.(*corev1.Secret); ok {
		kind = v1alpha1.KindSecret
	}
	var ms v1alpha1.MirrorList
	_ = s.r.List(ctx, &ms, client.MatchingFields{mirror.IndexSource: mirror.SourceKey(kind, obj.GetNamespace(), obj.GetName())})
	var out []ctrl.Request
	for _, m := range ms.Items {
		out = append(out, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: m.Namespace, Name: m.Name}})
	}
	if l := obj.GetLabels(); mirror.CopyOf(obj) != "" {
		out = append(out, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: l[mirror.LabelMirrorNamespace], Name: l[mirror.LabelMirrorName]}})
	}
	return out
}

// mirrorsSelecting maps a namespace to the Mirrors it accepts
// (mirror.AcceptLabel) whose selector matches it, as mirror's Setup does.
func (s store) mirrorsSelecting(ctx context.Context, obj client.Object) []ctrl.Request {
	var out []ctrl.Request
	for k, v := range obj.GetLabels() {
		home, ok := strings.CutPrefix(k, mirror.AcceptLabelPrefix)
		if !ok {
			continue
		}
		var ms v1alpha1.MirrorList
		_ = s.r.List(ctx, &ms, client.InNamespace(home))
		for _, m := range ms.Items {
			if v != "true" && v != m.Name {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(&m.Spec.NamespaceSelector)
			if err == nil && sel.Matches(labels.Set(obj.GetLabels())) {
				out = append(out, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: m.Namespace, Name: m.Name}})
			}
		}
	}
	return out
}
