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
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

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

func TestSetControllerRef(t *testing.T) {
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web"}}
	webRef := controllerRef("apps/v1", "Deployment", "web", "uid-web")
	other := controllerRef("apps/v1", "StatefulSet", "db", "uid-db")
	plain := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg", UID: "uid-cfg"}
	for _, tc := range []struct {
		name    string
		owner   client.Object
		child   client.Object
		want    []metav1.OwnerReference // the child's references afterwards
		wantErr string                  // a substring of the error; empty for none
	}{
		{"sets the reference",
			web, configMap("ns", nil),
			[]metav1.OwnerReference{webRef}, ""},
		{"keeps other owners' plain references",
			web, configMap("ns", []metav1.OwnerReference{plain}),
			[]metav1.OwnerReference{plain, webRef}, ""},
		{"idempotent for the same owner",
			web, configMap("ns", []metav1.OwnerReference{webRef}),
			[]metav1.OwnerReference{webRef}, ""},
		{"a cluster-scoped owner controls a child in any namespace",
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "uid-ns"}}, configMap("other", nil),
			[]metav1.OwnerReference{controllerRef("v1", "Namespace", "team-a", "uid-ns")}, ""},
		{"refuses a second controller",
			web, configMap("ns", []metav1.OwnerReference{other}),
			[]metav1.OwnerReference{other}, "already owned by another StatefulSet controller db"},
		{"refuses an owner in another namespace",
			web, configMap("elsewhere", nil),
			nil, "cross-namespace owner references are disallowed"},
		{"refuses a namespaced owner of a cluster-scoped child",
			web, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			nil, "cluster-scoped resource must not have a namespace-scoped owner"},
		{"refuses an owner without a UID",
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}, configMap("ns", nil),
			nil, "the owner has no UID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := owner.SetControllerRef(newScheme(t), tc.owner, tc.child)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("SetControllerRef = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("SetControllerRef = %v, want an error containing %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, tc.child.GetOwnerReferences()); diff != "" {
				t.Errorf("the child's owner references (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetControllerRefAlreadyOwned(t *testing.T) {
	db := controllerRef("apps/v1", "StatefulSet", "db", "uid-db")
	child := configMap("ns", []metav1.OwnerReference{db})
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web"}}
	err := owner.SetControllerRef(newScheme(t), web, child)
	var owned *owner.AlreadyOwnedError
	if !errors.As(err, &owned) {
		t.Fatalf("SetControllerRef of a child another controls = %v, want an *owner.AlreadyOwnedError", err)
	}
	if diff := cmp.Diff(db, owned.Owner); diff != "" {
		t.Errorf("AlreadyOwnedError.Owner (-want +got):\n%s", diff)
	}
	if owned.Object != metav1.Object(child) {
		t.Errorf("AlreadyOwnedError.Object = %v, want the child", owned.Object)
	}
	// controller-runtime's own type: code ported from it keeps its errors.As.
	var crOwned *controllerutil.AlreadyOwnedError
	if !errors.As(err, &crOwned) {
		t.Errorf("SetControllerRef's error is not a *controllerutil.AlreadyOwnedError")
	}
}

func configMap(namespace string, refs []metav1.OwnerReference) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "child", OwnerReferences: refs}}
}
