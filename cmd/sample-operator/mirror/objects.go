package mirror

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
)

// desired returns the copy of src that namespace ns should hold for m. Its
// maps are clones: the client decodes the API server's answer into the
// object it writes, and src's maps belong to the cache.
func desired(src client.Object, ns string, m *v1alpha1.Mirror) (client.Object, error) {
	meta := metav1.ObjectMeta{
		Name:      src.GetName(),
		Namespace: ns,
		Labels:    map[string]string{LabelMirrorNamespace: m.Namespace, LabelMirrorName: m.Name},
	}
	switch s := src.(type) {
	case *corev1.ConfigMap:
		return &corev1.ConfigMap{ObjectMeta: meta, Data: maps.Clone(s.Data), BinaryData: maps.Clone(s.BinaryData)}, nil
	case *corev1.Secret:
		return &corev1.Secret{ObjectMeta: meta, Type: s.Type, Data: maps.Clone(s.Data)}, nil
	default:
		return nil, fmt.Errorf("mirror: cannot copy a %T", src)
	}
}

// owned reports whether obj is a copy of m.
func owned(obj client.Object, m *v1alpha1.Mirror) bool {
	return CopyOf(obj) == MirrorKey(m.Namespace, m.Name)
}

// inSync reports whether the copy cur holds what want does.
func inSync(cur, want client.Object) bool {
	switch c := cur.(type) {
	case *corev1.ConfigMap:
		w := want.(*corev1.ConfigMap)
		return maps.Equal(c.Data, w.Data) && equalBytes(c.BinaryData, w.BinaryData)
	case *corev1.Secret:
		w := want.(*corev1.Secret)
		return c.Type == w.Type && equalBytes(c.Data, w.Data)
	}
	return false
}

func equalBytes(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, func(x, y []byte) bool { return string(x) == string(y) })
}

// sameType reports whether cur can be patched into want: a Secret's type
// cannot change.
func sameType(cur, want client.Object) bool {
	c, ok := cur.(*corev1.Secret)
	return !ok || c.Type == want.(*corev1.Secret).Type
}

// withContent returns a copy of cur (a cached object, not to be modified)
// holding want's labels and content, for a merge patch from cur.
func withContent(cur, want client.Object) client.Object {
	out := cur.DeepCopyObject().(client.Object)
	labels := maps.Clone(out.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, want.GetLabels())
	out.SetLabels(labels)
	switch o := out.(type) {
	case *corev1.ConfigMap:
		w := want.(*corev1.ConfigMap)
		o.Data, o.BinaryData = w.Data, w.BinaryData
	case *corev1.Secret:
		o.Data = want.(*corev1.Secret).Data
	}
	return out
}
