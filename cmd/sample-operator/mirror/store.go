package mirror

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
)

// Store is what the reconciler reads, from a cache. Objects it returns are
// shared with the cache: the reconciler never modifies them. A missing
// object is an error for which apierrors.IsNotFound is true.
//
// The copies of a source go into many namespaces, so a Store need not hold
// their data: Meta and Copies may return metadata only (a
// *metav1.PartialObjectMetadata), and the reconciler then tells an
// up-to-date copy by its AnnotationContentHash and its resourceVersion,
// and reads one with Fetch when it cannot.
type Store interface {
	// Mirror returns the Mirror namespace/name.
	Mirror(namespace, name string) (*v1alpha1.Mirror, error)
	// Namespaces returns the namespaces that selector matches.
	Namespaces(selector labels.Selector) ([]*corev1.Namespace, error)
	// Object returns the ConfigMap or Secret (by kind) namespace/name in
	// full: a source.
	Object(ctx context.Context, kind, namespace, name string) (client.Object, error)
	// Meta returns the ConfigMap or Secret (by kind) namespace/name, a copy
	// or not, of which the reconciler reads the metadata only: where a copy
	// goes. It reads from memory: it does not block on the network.
	Meta(kind, namespace, name string) (client.Object, error)
	// Copies returns the objects of kind labelled as copies of the Mirror
	// mirrorNamespace/mirrorName, in every namespace; the reconciler reads
	// their metadata only.
	Copies(kind, mirrorNamespace, mirrorName string) ([]client.Object, error)
	// Fetch returns the ConfigMap or Secret (by kind) namespace/name in
	// full, read from the API server if the Store holds its metadata only,
	// and owned by the caller: a copy whose content the reconciler must
	// compare. It is not cached.
	Fetch(ctx context.Context, kind, namespace, name string) (client.Object, error)
}

// Labels and names the operator puts on what it writes.
const (
	// LabelMirrorNamespace and LabelMirrorName name a copy's Mirror.
	LabelMirrorNamespace = "samples.opkit.dev/mirror-namespace"
	LabelMirrorName      = "samples.opkit.dev/mirror-name"
	// AnnotationContentHash on a copy is the digest of the content the
	// operator wrote into it (the digest of the source's content).
	AnnotationContentHash = "samples.opkit.dev/content-hash"
	// EventMirrorConflict is the reason of the Event that tells a
	// namespace that a Mirror left its object of the source's name alone.
	EventMirrorConflict = "MirrorConflict"
	// Finalizer keeps a deleted Mirror until its copies are gone.
	Finalizer = "samples.opkit.dev/copies"
	// IndexSource indexes Mirrors by SourceKey of their source.
	IndexSource = "mirror.spec.source"
	// IndexCopyOf indexes copies by MirrorKey of their Mirror.
	IndexCopyOf = "mirror.copyOf"
)

// SourceKey is the key of IndexSource: kind, namespace and name.
func SourceKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// MirrorKey is the key of IndexCopyOf: the Mirror's namespace and name.
func MirrorKey(namespace, name string) string { return namespace + "/" + name }

// CopyOf returns the MirrorKey of the Mirror whose copy obj is, or "".
func CopyOf(obj client.Object) string {
	l := obj.GetLabels()
	ns, name := l[LabelMirrorNamespace], l[LabelMirrorName]
	if ns == "" || name == "" {
		return ""
	}
	return MirrorKey(ns, name)
}

// MirrorSources indexes a Mirror by its source.
func MirrorSources(m *v1alpha1.Mirror) []string {
	return []string{SourceKey(m.Spec.Source.Kind, m.Namespace, m.Spec.Source.Name)}
}

// CopyIndex indexes a copy by its Mirror.
func CopyIndex(obj client.Object) []string {
	if k := CopyOf(obj); k != "" {
		return []string{k}
	}
	return nil
}
