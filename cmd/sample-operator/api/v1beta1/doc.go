// Package v1beta1 is the samples.opkit.dev/v1beta1 API of the sample
// operator: the same Mirror as v1alpha1, reshaped.
//
//   - spec.from is a one-of, {configMap: {name}} or {secret: {name}}, where
//     v1alpha1 has spec.source {kind, name}; the schema requires exactly
//     one.
//   - spec.to.namespaceSelector is v1alpha1's spec.namespaceSelector.
//   - status is the same.
//
// v1beta1 is served, not stored: Mirrors are stored as v1alpha1 (the
// storage version and conversion hub), and Mirror.ConvertTo and
// ConvertFrom convert to and from it without losing anything. A v1alpha1
// Mirror whose spec.source.kind is unset (possible only for one stored
// before the CRD defaulted it) cannot say its source in spec.from:
// its v1beta1 form leaves spec.from empty and keeps the source's name in
// the annotation AnnotationSourceName, which ConvertTo reads back and
// removes.
//
// +kubebuilder:object:generate=true
// +groupName=samples.opkit.dev
package v1beta1
