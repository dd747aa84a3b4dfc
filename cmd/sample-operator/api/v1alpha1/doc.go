// Package v1alpha1 is the samples.opkit.dev/v1alpha1 API of the sample
// operator: the Mirror, which copies a ConfigMap or Secret into every
// namespace that matches a selector.
//
// Versions:
//
//   - v1alpha1 is the storage version: every Mirror is stored as v1alpha1,
//     whichever version it was written in, so Mirrors written before
//     v1beta1 existed need no migration.
//   - It is the conversion hub (Mirror.Hub): package v1beta1 converts to
//     and from it, losslessly both ways.
//   - The operator reads and writes v1alpha1 only; its admission webhooks
//     are registered for v1alpha1, and the API server converts a v1beta1
//     request to v1alpha1 before calling them. It applies the status
//     through the apply configurations controller-gen generates in
//     applyconfiguration/ (make manifests).
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=samples.opkit.dev
package v1alpha1
