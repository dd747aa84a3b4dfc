package mirror

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
)

// desired returns the copy of src, whose content digest is sum, that
// namespace ns should hold for m. Its maps are clones of src's, which
// belong to the cache, because the client decodes the API server's answer
// into the object it writes; the values, which hold the data, are shared.
// The copy is the caller's to write and drop: one lives per write.
func desired(src client.Object, ns string, m *v1alpha1.Mirror, sum string) (client.Object, error) {
	meta := metav1.ObjectMeta{
		Name:        src.GetName(),
		Namespace:   ns,
		Labels:      map[string]string{LabelMirrorNamespace: m.Namespace, LabelMirrorName: m.Name},
		Annotations: map[string]string{AnnotationContentHash: sum},
	}
	switch s := src.(type) {
	case *corev1.ConfigMap:
		return &corev1.ConfigMap{ObjectMeta: meta, Data: maps.Clone(s.Data), BinaryData: maps.Clone(s.BinaryData)}, nil
	case *corev1.Secret:
		return &corev1.Secret{ObjectMeta: meta, Type: secretType(s), Data: maps.Clone(s.Data)}, nil
	default:
		return nil, fmt.Errorf("mirror: cannot copy a %T", src)
	}
}

// contentHash returns the digest of what a copy of obj, a ConfigMap or a
// Secret, holds: its data (and a Secret's type), not its metadata. A copy
// carries its source's in AnnotationContentHash.
func contentHash(obj client.Object) (string, error) {
	h := sha256.New()
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		writeString(h, "ConfigMap")
		for _, k := range slices.Sorted(maps.Keys(o.Data)) {
			writeString(h, k)
			writeString(h, o.Data[k])
		}
		writeString(h, "binaryData")
		writeBytes(h, o.BinaryData)
	case *corev1.Secret:
		writeString(h, "Secret")
		writeString(h, string(secretType(o)))
		writeBytes(h, o.Data)
	default:
		return "", fmt.Errorf("mirror: cannot copy a %T", obj)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// writeString writes s, prefixed with its length so that no two sequences
// of strings write the same bytes.
func writeString(h hash.Hash, s string) {
	_ = binary.Write(h, binary.BigEndian, uint64(len(s)))
	_, _ = h.Write([]byte(s))
}

func writeBytes(h hash.Hash, m map[string][]byte) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		writeString(h, k)
		_ = binary.Write(h, binary.BigEndian, uint64(len(m[k])))
		_, _ = h.Write(m[k])
	}
}

// owned reports whether obj is a copy of m.
func owned(obj client.Object, m *v1alpha1.Mirror) bool {
	return CopyOf(obj) == MirrorKey(m.Namespace, m.Name)
}

// jsonPatchOp is one operation of a JSON patch (RFC 6902).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// contentPatch returns the JSON patch that puts src's content, and sum in
// AnnotationContentHash, into the copy cur, of which only the metadata is
// known: "add" replaces a member that exists, so the copy's data is
// replaced whole, keys it gained removed. The patch sets cur's
// resourceVersion, so that the API server refuses it (409) if the copy
// changed since; a Secret's type, which is immutable, makes it invalid
// (422) if the source's type changed. The patch holds src's data: encode
// it, send it and drop it.
func contentPatch(cur metav1.Object, src client.Object, sum string) ([]byte, error) {
	ops := []jsonPatchOp{{Op: "replace", Path: "/metadata/resourceVersion", Value: cur.GetResourceVersion()}}
	if len(cur.GetAnnotations()) == 0 {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{AnnotationContentHash: sum}})
	} else {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(AnnotationContentHash), Value: sum})
	}
	// An empty map rather than null: {} and null decode alike, and some
	// JSON patch implementations mishandle a null value.
	switch s := src.(type) {
	case *corev1.ConfigMap:
		ops = append(ops,
			jsonPatchOp{Op: "add", Path: "/data", Value: orEmpty(s.Data)},
			jsonPatchOp{Op: "add", Path: "/binaryData", Value: orEmpty(s.BinaryData)})
	case *corev1.Secret:
		ops = append(ops,
			jsonPatchOp{Op: "add", Path: "/type", Value: secretType(s)},
			jsonPatchOp{Op: "add", Path: "/data", Value: orEmpty(s.Data)})
	default:
		return nil, fmt.Errorf("mirror: cannot copy a %T", src)
	}
	return json.Marshal(ops)
}

func orEmpty[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// escapePointer escapes s for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
