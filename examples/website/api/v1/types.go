// Package v1 is the example.opkit.dev/v1 API of examples/website: the
// Website kind. controller-gen makes its deep copies, its CRD
// (../../config/crd) and, in applyconfiguration/, the apply configurations
// the controllers write its status with (make manifests), as it does for a
// scaffolded project's api/<version>.
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=example.opkit.dev
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: "example.opkit.dev", Version: "v1"}

// SchemeGroupVersion is GroupVersion under the name that the generated
// applyconfiguration/utils.go refers to.
var SchemeGroupVersion = GroupVersion

// AddToScheme adds the API's types to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Website{}, &WebsiteList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// ConditionReady is True when the Website's Deployment has seen its
// latest spec and has every replica available.
const ConditionReady = "Ready"

// WebsiteSpec is what a Website runs.
type WebsiteSpec struct {
	// Image is the container image that serves the site.
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`
	// Replicas is the number of pods that serve it.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
}

// WebsiteStatus is what the controller last saw.
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
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=websites,scope=Namespaced
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
// +kubebuilder:object:root=true
type WebsiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Website `json:"items"`
}
