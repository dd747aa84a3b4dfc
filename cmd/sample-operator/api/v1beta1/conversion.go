package v1beta1

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
)

var _ conversion.Convertible = (*Mirror)(nil)

// ConvertTo converts m to the hub, a *v1alpha1.Mirror. m is not modified.
func (m *Mirror) ConvertTo(dst conversion.Hub) error {
	hub, ok := dst.(*v1alpha1.Mirror)
	if !ok {
		return fmt.Errorf("convert Mirror %s/%s to the hub: want a *v1alpha1.Mirror, got %T", m.Namespace, m.Name, dst)
	}
	m.ObjectMeta.DeepCopyInto(&hub.ObjectMeta)
	hub.TypeMeta = m.TypeMeta
	hub.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Mirror"))
	hub.Spec = v1alpha1.MirrorSpec{Source: sourceOf(m), ServiceAccountName: m.Spec.ServiceAccountName}
	m.Spec.To.NamespaceSelector.DeepCopyInto(&hub.Spec.NamespaceSelector)
	m.Status.DeepCopyInto(&hub.Status)
	if !hasSource(m.Spec.From) {
		delete(hub.Annotations, AnnotationSourceName)
		if len(hub.Annotations) == 0 {
			hub.Annotations = nil
		}
	}
	return nil
}

// ConvertFrom converts the hub, a *v1alpha1.Mirror, to m. src is not
// modified.
func (m *Mirror) ConvertFrom(src conversion.Hub) error {
	hub, ok := src.(*v1alpha1.Mirror)
	if !ok {
		return fmt.Errorf("convert Mirror from the hub: want a *v1alpha1.Mirror, got %T", src)
	}
	hub.ObjectMeta.DeepCopyInto(&m.ObjectMeta)
	m.TypeMeta = hub.TypeMeta
	m.SetGroupVersionKind(GroupVersion.WithKind("Mirror"))
	m.Spec = MirrorSpec{ServiceAccountName: hub.Spec.ServiceAccountName}
	hub.Spec.NamespaceSelector.DeepCopyInto(&m.Spec.To.NamespaceSelector)
	hub.Status.DeepCopyInto(&m.Status)
	name := &ObjectName{Name: hub.Spec.Source.Name}
	switch hub.Spec.Source.Kind {
	case v1alpha1.KindConfigMap:
		m.Spec.From.ConfigMap = name
	case v1alpha1.KindSecret:
		m.Spec.From.Secret = name
	case "":
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[AnnotationSourceName] = hub.Spec.Source.Name
	default:
		return fmt.Errorf("convert Mirror %s/%s from the hub: spec.source.kind %q is neither %s nor %s",
			hub.Namespace, hub.Name, hub.Spec.Source.Kind, v1alpha1.KindConfigMap, v1alpha1.KindSecret)
	}
	return nil
}

// hasSource reports whether f names a source.
func hasSource(f From) bool { return f.ConfigMap != nil || f.Secret != nil }

// sourceOf returns m's source in v1alpha1's shape. Without spec.from, the
// kind stays unset and the name is AnnotationSourceName's.
func sourceOf(m *Mirror) v1alpha1.SourceRef {
	switch {
	case m.Spec.From.ConfigMap != nil:
		return v1alpha1.SourceRef{Kind: v1alpha1.KindConfigMap, Name: m.Spec.From.ConfigMap.Name}
	case m.Spec.From.Secret != nil:
		return v1alpha1.SourceRef{Kind: v1alpha1.KindSecret, Name: m.Spec.From.Secret.Name}
	}
	return v1alpha1.SourceRef{Name: m.Annotations[AnnotationSourceName]}
}
