// Package website is one complete custom-resource controller on opkit,
// compiled and tested: a Website runs its image as a Deployment it owns,
// keeps a record of itself in another namespace, which its finalizer
// deletes, and reports a Ready condition with observedGeneration.
//
//   - types.go: the Website API (controller-gen makes the deep copies and
//     config/crd from its markers: make manifests).
//   - website.go: the controller, on opkit.
//   - website_controllerruntime_test.go: the same controller on
//     controller-runtime v0.25's builder and controllerutil, for
//     comparison; TestControllerNoLargerThanControllerRuntime keeps
//     website.go no longer than it, with no more imports and no more
//     mentions of each Kubernetes type.
//   - website_test.go: both controllers, run in turn on a local control
//     plane (pkg/testenv).
//
// +groupName=example.opkit.dev
// +versionName=v1
package website

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: "example.opkit.dev", Version: "v1"}

// AddToScheme adds the API's types to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Website{}, &WebsiteList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// What both controllers share with their users.
const (
	// Finalizer holds a Website being deleted until its record is gone.
	Finalizer = "example.opkit.dev/record"
	// Records is the namespace of the Websites' records: a ConfigMap per
	// Website, named <namespace>.<name>. An owner reference cannot reach
	// across namespaces, so the finalizer deletes it.
	Records = "website-records"
	// ConditionReady is True when the Website's Deployment has seen its
	// latest spec and has every replica available.
	ConditionReady = "Ready"
)

// WebsiteSpec is what a Website runs.
//
// +kubebuilder:object:generate=true
type WebsiteSpec struct {
	// Image is the container image that serves the site.
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`
	// Replicas is the number of pods that serve it.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
}

// WebsiteStatus is what the controller last saw.
//
// +kubebuilder:object:generate=true
type WebsiteStatus struct {
	// ObservedGeneration is the generation of the spec the status is
	// about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Website is a site served by a Deployment of its image.
//
// +kubebuilder:object:generate=true
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
type Website struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WebsiteSpec   `json:"spec"`
	Status WebsiteStatus `json:"status,omitempty"`
}

// WebsiteList is a list of Websites.
//
// +kubebuilder:object:generate=true
// +kubebuilder:object:root=true
type WebsiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Website `json:"items"`
}
