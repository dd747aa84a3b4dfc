package porting_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/opkit-dev/opkit/pkg/owner"
)

// controllerutil.SetControllerReference writes the reference into the
// child; owner.ControllerRef returns the same reference as a value, so the
// owner may be the cache's object and the child a literal.
func Example_ownerReference() {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "0b6c6bd4"}}

	before := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-config"}}
	if err := controllerutil.SetControllerReference(dep, before, scheme); err != nil {
		panic(err)
	}

	ref, err := owner.ControllerRef(scheme, dep)
	if err != nil {
		panic(err)
	}
	after := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-config", OwnerReferences: []metav1.OwnerReference{ref}}}

	fmt.Println(equality.Semantic.DeepEqual(before, after), ref.Kind, ref.Name, *ref.Controller)
	// Output: true Deployment web true
}
