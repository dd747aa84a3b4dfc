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

// AlreadyOwnedError is SetControllerRef's error for a child that another
// controller already controls: Owner is that controller's reference. It is
// controller-runtime's type, so code that tests for it with errors.As
// keeps working.
type AlreadyOwnedError = controllerutil.AlreadyOwnedError

// SetControllerRef adds ControllerRef's reference to owner to child's owner
// references, keeping the others. It modifies child, never owner: pass a
// child being built, or a DeepCopy of a cached one, never the cached
// object itself.
//
// It is idempotent: if child's controller is already owner (the same group,
// kind and name), that reference is replaced by a fresh one, so an owner
// recreated under the same name takes the child over. It refuses, leaving
// child as it was:
//   - a child another object controls: the error wraps an
//     *AlreadyOwnedError (errors.As) naming that controller;
//   - a namespaced owner in another namespace than child's, or of a
//     cluster-scoped child, which Kubernetes would never resolve;
//   - an owner without a UID (ErrNoUID) or whose type scheme lacks.
//
// It is controllerutil.SetControllerReference with ControllerRef's check
// of the UID.
func SetControllerRef(scheme *runtime.Scheme, owner, child client.Object) error {
	if owner.GetUID() == "" {
		return fmt.Errorf("owner: set controller of %T %s to %T %s: %w: pass the object read from the API server or the cache", child, key(child), owner, key(owner), ErrNoUID)
	}
	if err := controllerutil.SetControllerReference(owner, child, scheme); err != nil {
		return fmt.Errorf("owner: set controller of %T %s to %T %s: %w", child, key(child), owner, key(owner), err)
	}
	return nil
}

// key names o as namespace/name, or name if it is cluster-scoped.
func key(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
