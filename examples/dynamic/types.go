// Package dynamic is a small operator that learns at run time what to
// watch: a WatchSet lists kinds by group, version and kind, and for each
// kind listed by any WatchSet the operator holds a metadata-only Lister
// and runs a controller, added to the running manager when a WatchSet
// first names the kind and removed when none does any more. Each
// WatchSet's status counts the objects of its kinds in its namespace and
// says how each kind's watch fares (CRD not installed, deleted, forbidden).
//
//   - types.go: the WatchSet API (controller-gen makes the deep copies and
//     config/crd from its markers: make manifests).
//   - dynamic.go: the operator.
//   - dynamic_test.go: the operator on a local control plane (pkg/testenv).
//
// +groupName=examples.opkit.dev
// +versionName=v1alpha1
package dynamic

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: "examples.opkit.dev", Version: "v1alpha1"}

// AddToScheme adds the API's types to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &WatchSet{}, &WatchSetList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Kind names a kind to watch.
//
// +kubebuilder:object:generate=true
type Kind struct {
	// Group is the kind's API group, empty for the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// +kubebuilder:validation:MinLength=1
	Version string `json:"version"`
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// Selector limits the objects counted. Defaults to every object.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// GVK returns the kind's GroupVersionKind.
func (k Kind) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
}

// WatchSetSpec lists the kinds to watch.
//
// +kubebuilder:object:generate=true
type WatchSetSpec struct {
	// +listType=atomic
	Kinds []Kind `json:"kinds"`
}

// KindStatus is what the operator sees of one kind.
//
// +kubebuilder:object:generate=true
type KindStatus struct {
	Group   string `json:"group,omitempty"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// Count is how many objects of the kind the WatchSet's namespace holds
	// that match its selector.
	Count int `json:"count"`
	// State is Watching, Syncing, CRDNotInstalled, CRDDeleted, Forbidden or
	// Error.
	State string `json:"state"`
	// Message says why, when State is not Watching.
	// +optional
	Message string `json:"message,omitempty"`
}

// WatchSetStatus is what the operator last saw, one entry per kind in
// the spec, in its order.
//
// +kubebuilder:object:generate=true
type WatchSetStatus struct {
	// +listType=atomic
	// +optional
	Kinds []KindStatus `json:"kinds,omitempty"`
}

// WatchSet names kinds whose objects the operator counts in its namespace.
//
// +kubebuilder:object:generate=true
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type WatchSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WatchSetSpec   `json:"spec"`
	Status WatchSetStatus `json:"status,omitempty"`
}

// WatchSetList is a list of WatchSets.
//
// +kubebuilder:object:generate=true
// +kubebuilder:object:root=true
type WatchSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WatchSet `json:"items"`
}
