// Package owner builds controller owner references from the scheme, so that
// no reconciler spells an owner's group, version and kind out by hand.
//
// Its contract:
//
//   - Values, not mutations: ControllerRef returns a metav1.OwnerReference
//     and ApplyControllerRef the same reference as an apply configuration.
//     Neither touches any object, so they are safe with the shared objects
//     a cache Lister hands out, and they suit what a reconciler writes:
//     a fresh child it creates, or an apply configuration it applies.
//     SetControllerRef is the one that modifies: it adds the reference to
//     a child you hold (one being built, or a DeepCopy, never a cached
//     object), as controllerutil.SetControllerReference does.
//   - One controller: SetControllerRef refuses a child that another object
//     controls with an error wrapping *AlreadyOwnedError
//     (controller-runtime's type), and is a no-op for the same owner.
//   - From the scheme: the owner's kind is looked up in the scheme (or read
//     from an unstructured or metadata-only owner), through
//     controller-runtime's controllerutil.SetControllerReference, which
//     this package wraps rather than rewrites. The reference says
//     controller: true and blockOwnerDeletion: true, as controller-runtime's
//     does. Where the OwnerReferencesPermissionEnforcement admission plugin
//     is on (OpenShift turns it on), blockOwnerDeletion needs RBAC
//     permission to update the owner's finalizers subresource.
//   - Only for owners read from the API server: an owner without a UID is
//     an error wrapping ErrNoUID. The garbage collector treats a reference
//     whose UID matches no object as an owner that is gone, and deletes the
//     child; an empty UID is the usual slip (an owner built in memory).
//   - Same namespace: Kubernetes looks a namespaced child's owner up in the
//     child's own namespace. Give the reference only to children in the
//     owner's namespace, or to any child of a cluster-scoped owner.
//
// To list an owner's children, index them with cache's
// Lister.IndexControlledBy (manager.Owns does) and read them with
// Lister.ControlledBy; metav1.IsControlledBy tells whether an object is
// controlled by another.
package owner
