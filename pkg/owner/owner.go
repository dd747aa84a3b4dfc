package owner

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// ErrNoUID is wrapped by the error of ControllerRef and ApplyControllerRef
// for an owner without a UID, which was not read from the API server.
var ErrNoUID = errors.New("the owner has no UID")

// ControllerRef returns a controller reference to owner, whose kind scheme
// knows: controller: true, blockOwnerDeletion: true. It does not modify
// owner, which may be a cached object.
//
// Set it on a child in owner's namespace (any namespace if owner is
// cluster-scoped) before creating the child:
//
//	ref, err := owner.ControllerRef(scheme, mirror)
//	copy := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
//		Name: name, Namespace: mirror.Namespace,
//		OwnerReferences: []metav1.OwnerReference{ref},
//	}}
func ControllerRef(scheme *runtime.Scheme, owner client.Object) (metav1.OwnerReference, error) {
	if owner.GetUID() == "" {
		return metav1.OwnerReference{}, fmt.Errorf("owner: controller reference to %T %s: %w: pass the object read from the API server or the cache", owner, key(owner), ErrNoUID)
	}
	// A scratch child in owner's namespace is always one owner may control,
	// so that controllerutil's checks of the pair cannot fail on it.
	child := &metav1.ObjectMeta{Namespace: owner.GetNamespace()}
	if err := controllerutil.SetControllerReference(owner, child, scheme); err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("owner: controller reference to %T %s: %w: add its type to the scheme", owner, key(owner), err)
	}
	return child.OwnerReferences[0], nil
}

// ApplyControllerRef returns ControllerRef's reference as an apply
// configuration, for the WithOwnerReferences of a server-side apply.
func ApplyControllerRef(scheme *runtime.Scheme, owner client.Object) (*metav1ac.OwnerReferenceApplyConfiguration, error) {
	ref, err := ControllerRef(scheme, owner)
	if err != nil {
		return nil, err
	}
	return metav1ac.OwnerReference().
		WithAPIVersion(ref.APIVersion).
		WithKind(ref.Kind).
		WithName(ref.Name).
		WithUID(ref.UID).
		WithController(*ref.Controller).
		WithBlockOwnerDeletion(*ref.BlockOwnerDeletion), nil
}

// key names o as namespace/name, or name if it is cluster-scoped.
func key(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
