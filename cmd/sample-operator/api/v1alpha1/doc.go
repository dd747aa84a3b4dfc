// Package v1alpha1 is the samples.opkit.dev/v1alpha1 API of the sample
// operator: the Mirror, which copies a ConfigMap or Secret into every
// namespace that matches a selector.
//
// +kubebuilder:object:generate=true
// +groupName=samples.opkit.dev
package v1alpha1
