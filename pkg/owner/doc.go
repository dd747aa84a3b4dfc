// Package owner builds controller owner references from the scheme, so that
// no reconciler spells an owner's group, version and kind out by hand.
//
// Its contract:
//
//   - Values, not mutations: ControllerRef and ApplyControllerRef return a
//     reference and touch no object, so they are safe with a Lister's
//     shared objects. SetControllerRef modifies the child you hold (one
//     being built, or a DeepCopy, never a cached object), as
//     controllerutil.SetControllerReference does.
//   - One controller: SetControllerRef refuses a child that another object
//     controls (*AlreadyOwnedError, controller-runtime's type), and is a
//     no-op for the same owner.
//   - From the scheme: the owner's kind comes from the scheme (or from an
//     unstructured or metadata-only owner). The reference says controller
//     and blockOwnerDeletion, as controller-runtime's does; where the
//     OwnerReferencesPermissionEnforcement admission plugin is on
//     (OpenShift), the latter needs RBAC update on the owner's finalizers.
//   - Only for owners read from the API server: an owner without a UID is
//     an error wrapping ErrNoUID, since the garbage collector deletes a
//     child whose owner's UID matches no object.
//   - Same namespace: give the reference only to children in the owner's
//     namespace, or to any child of a cluster-scoped owner; Kubernetes
//     looks a namespaced child's owner up in the child's namespace.
//
// To list an owner's children, read them with cache's Lister.ControlledBy,
// which indexes them by owner UID.
package owner
