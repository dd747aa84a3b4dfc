package cache

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// The index finds every form of object under its controller's UID, and
// nothing else under any value.
func TestControllerUID(t *testing.T) {
	refs := []metav1.OwnerReference{
		{Kind: "Secret", Name: "owner", UID: "uid-owner"},
		{Kind: "Deployment", Name: "web", UID: "uid-web", Controller: ptr.To(true)},
	}
	onlyOwners := []metav1.OwnerReference{refs[0], {Kind: "X", Name: "x", UID: "uid-x", Controller: ptr.To(false)}}
	u := &unstructured.Unstructured{}
	u.SetOwnerReferences(refs)
	for _, tc := range []struct {
		name string
		obj  any
		want []string
	}{
		{"typed", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{OwnerReferences: refs}}, []string{"uid-web"}},
		{"unstructured", u, []string{"uid-web"}},
		{"metadata only", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{OwnerReferences: refs}}, []string{"uid-web"}},
		{"owners but no controller", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{OwnerReferences: onlyOwners}}, nil},
		{"no owners", &corev1.ConfigMap{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := controllerUID(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("controllerUID (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := controllerUID("not an object"); err == nil {
		t.Error("controllerUID of a string succeeded")
	}
}
