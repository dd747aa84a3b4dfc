package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GuestSpec defines the desired state of Guest.
type GuestSpec struct {
	// Name is whom the guest's ConfigMap greets.
	Name string `json:"name,omitempty"`
}

// +kubebuilder:object:root=true

// Guest is the Schema for the guests API.
type Guest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GuestSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// GuestList contains a list of Guest.
type GuestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Guest `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Guest{}, &GuestList{})
}
