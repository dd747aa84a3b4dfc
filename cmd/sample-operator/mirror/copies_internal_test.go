package mirror

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A conflict is told once per object and Mirror, again for an object made
// anew under the name, and the memory of it is bounded.
func TestToldOncePerObjectAndMirror(t *testing.T) {
	var tl told
	for _, tc := range []struct {
		uid    types.UID
		mirror string
		want   bool
	}{
		{"u1", "home/a", true},
		{"u1", "home/a", false},
		{"u1", "home/b", true},
		{"u2", "home/a", true},
		{"u2", "home/a", false},
	} {
		if got := tl.first(tc.uid, tc.mirror); got != tc.want {
			t.Errorf("first(%s, %s) = %v, want %v", tc.uid, tc.mirror, got, tc.want)
		}
	}
	for i := range toldSize + 10 {
		tl.first(types.UID(fmt.Sprint(i)), "home/a")
	}
	if n := tl.cache.Len(); n > toldSize {
		t.Errorf("told remembers %d conflicts, want at most %d", n, toldSize)
	}
}

// The content digest covers data, binary data and a Secret's type, and
// nothing else.
func TestContentHash(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "a", Name: "x", Labels: map[string]string{"k": "v"}}
	base := &corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "2"}}
	same := []client.Object{
		&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"b": "2", "a": "1"}},
	}
	different := []client.Object{
		&corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "3"}},
		&corev1.ConfigMap{Data: map[string]string{"a": "1"}},
		&corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": nil}},
		&corev1.ConfigMap{Data: map[string]string{"a": "1b", "": "2"}},
		&corev1.Secret{Data: map[string][]byte{"a": []byte("1"), "b": []byte("2")}},
	}
	want, err := contentHash(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range same {
		if got, _ := contentHash(o); got != want {
			t.Errorf("contentHash(%v) = %s, want %s", o, got, want)
		}
	}
	for _, o := range different {
		if got, _ := contentHash(o); got == want {
			t.Errorf("contentHash(%v) = the digest of %v", o, base)
		}
	}
	opaque, _ := contentHash(&corev1.Secret{Type: corev1.SecretTypeOpaque})
	untyped, _ := contentHash(&corev1.Secret{})
	tls, _ := contentHash(&corev1.Secret{Type: corev1.SecretTypeTLS})
	if opaque != untyped || opaque == tls {
		t.Errorf("Secret digests: Opaque %s, untyped %s, tls %s; want Opaque = untyped ≠ tls", opaque, untyped, tls)
	}
}

// A failed sync is summarised by reason, and a 403 by the verb and
// resource refused, without the namespaces and user the API server names.
func TestFailuresNameNoNamespace(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cfg",
		errors.New(`User "system:serviceaccount:ops:mirror" cannot create resource "configmaps" in API group "" in the namespace "victim"`))
	err := errors.Join(
		fmt.Errorf("create ConfigMap victim/cfg: %w", forbidden),
		errors.Join(fmt.Errorf("create ConfigMap other/cfg: %w", forbidden), apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "cfg", errors.New("changed"))),
		fmt.Errorf("update ConfigMap third/cfg: %w", apierrors.NewInternalError(errors.New("etcd in namespace third"))),
	)
	want := `3 writes failed: Forbidden (cannot create resource "configmaps"), InternalError`
	if got := failures(err); got != want {
		t.Errorf("failures = %q, want %q", got, want)
	}
}
