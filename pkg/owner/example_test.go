package owner_test

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/opkit-dev/opkit/pkg/owner"
)

// A reconciler of Deployments builds a child that its Deployment controls;
// the kind comes from the scheme. The Deployment would come from a Lister:
// it is only read.
func ExampleControllerRef() {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "0b6c6bd4"}}

	ref, err := owner.ControllerRef(scheme, web)
	if err != nil {
		fmt.Println(err)
		return
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: web.Namespace, Name: web.Name + "-config",
		OwnerReferences: []metav1.OwnerReference{ref},
	}}
	fmt.Println(ref.APIVersion, ref.Kind, ref.Name, ref.UID, *ref.Controller, *ref.BlockOwnerDeletion)
	fmt.Println(metav1.IsControlledBy(child, web))

	_, err = owner.ControllerRef(scheme, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "built-in-memory"}})
	fmt.Println(err)
	// Output:
	// apps/v1 Deployment web 0b6c6bd4 true true
	// true
	// owner: controller reference to *v1.Deployment built-in-memory: the owner has no UID: pass the object read from the API server or the cache
}

// The same reference for a server-side apply.
func ExampleApplyControllerRef() {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "0b6c6bd4"}}
	ref, err := owner.ApplyControllerRef(scheme, web)
	if err != nil {
		fmt.Println(err)
		return
	}
	child := corev1ac.ConfigMap(web.Name+"-config", web.Namespace).
		WithOwnerReferences(ref).
		WithData(map[string]string{"replicas": "3"})
	fmt.Println(*child.OwnerReferences[0].Kind, *child.OwnerReferences[0].Name)
	// Output:
	// Deployment web
}

// A reconciler that adopts an existing child sets its controller on a copy,
// and leaves alone a child that another controller already manages.
func ExampleSetControllerRef() {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "0b6c6bd4"}}
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-config"}}

	fmt.Println(owner.SetControllerRef(scheme, web, cfg))
	fmt.Println(owner.SetControllerRef(scheme, web, cfg)) // the same owner again: no change
	fmt.Println(len(cfg.OwnerReferences), metav1.IsControlledBy(cfg, web))

	api := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", UID: "5e1f03aa"}}
	err := owner.SetControllerRef(scheme, api, cfg)
	var owned *owner.AlreadyOwnedError
	if errors.As(err, &owned) {
		fmt.Println("controlled by", owned.Owner.Kind, owned.Owner.Name)
	}
	fmt.Println(err)
	// Output:
	// <nil>
	// <nil>
	// 1 true
	// controlled by Deployment web
	// owner: set controller of *v1.ConfigMap shop/web-config to *v1.Deployment shop/api: Object shop/web-config is already owned by another Deployment controller web
}
