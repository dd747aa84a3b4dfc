package owner_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/owner"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func controllerRef(apiVersion, kind, name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: k8stypes.UID(uid),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

func TestControllerRef(t *testing.T) {
	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(schema.GroupVersionKind{Group: "samples.opkit.dev", Version: "v1alpha1", Kind: "Widget"})
	widget.SetNamespace("ns")
	widget.SetName("w")
	widget.SetUID("uid-w")
	meta := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "uid-s"},
	}
	for _, tc := range []struct {
		name  string
		owner client.Object
		want  metav1.OwnerReference
	}{
		{"typed, kind from the scheme",
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web"}},
			controllerRef("apps/v1", "Deployment", "web", "uid-web")},
		{"cluster-scoped",
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "uid-ns"}},
			controllerRef("v1", "Namespace", "team-a", "uid-ns")},
		{"unstructured, kind from the object", widget,
			controllerRef("samples.opkit.dev/v1alpha1", "Widget", "w", "uid-w")},
		{"metadata only, kind from the object", meta,
			controllerRef("v1", "Secret", "s", "uid-s")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.owner.DeepCopyObject()
			got, err := owner.ControllerRef(newScheme(t), tc.owner)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ControllerRef (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.owner.DeepCopyObject()); diff != "" {
				t.Errorf("ControllerRef modified the owner (-before +after):\n%s", diff)
			}
			ac, err := owner.ApplyControllerRef(newScheme(t), tc.owner)
			if err != nil {
				t.Fatal(err)
			}
			applied := metav1.OwnerReference{
				APIVersion: *ac.APIVersion, Kind: *ac.Kind, Name: *ac.Name, UID: *ac.UID,
				Controller: ac.Controller, BlockOwnerDeletion: ac.BlockOwnerDeletion,
			}
			if diff := cmp.Diff(tc.want, applied); diff != "" {
				t.Errorf("ApplyControllerRef (-want +got):\n%s", diff)
			}
		})
	}
}

func TestControllerRefErrors(t *testing.T) {
	fresh := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	if _, err := owner.ControllerRef(newScheme(t), fresh); !errors.Is(err, owner.ErrNoUID) {
		t.Errorf("ControllerRef of an owner without a UID = %v, want ErrNoUID", err)
	}
	if _, err := owner.ApplyControllerRef(newScheme(t), fresh); !errors.Is(err, owner.ErrNoUID) {
		t.Errorf("ApplyControllerRef of an owner without a UID = %v, want ErrNoUID", err)
	}
	stranger := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid"}}
	_, err := owner.ControllerRef(runtime.NewScheme(), stranger)
	if err == nil || !strings.Contains(err.Error(), "add its type to the scheme") || !strings.Contains(err.Error(), "ns/web") {
		t.Errorf("ControllerRef of a type the scheme lacks = %v, want an error naming the owner and the scheme", err)
	}
}
