package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: "samples.opkit.dev", Version: "v1beta1"}

// AddToScheme adds the API's types to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Mirror{}, &MirrorList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// AnnotationSourceName keeps the source's name of a v1alpha1 Mirror whose
// spec.source.kind is unset, which spec.from cannot say (see the package
// doc). The annotation is the converter's: do not set it.
const AnnotationSourceName = "v1beta1.samples.opkit.dev/source-name"

// ObjectName names an object in the Mirror's namespace.
type ObjectName struct {
	// Name of the object, in the Mirror's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// From is the object a Mirror copies: exactly one of ConfigMap and Secret.
//
// +kubebuilder:validation:XValidation:rule="has(self.configMap) != has(self.secret)",message="set exactly one of configMap and secret"
type From struct {
	// ConfigMap names a ConfigMap to copy.
	// +optional
	ConfigMap *ObjectName `json:"configMap,omitempty"`
	// Secret names a Secret to copy.
	// +optional
	Secret *ObjectName `json:"secret,omitempty"`
}

// To is where a Mirror copies its source to.
type To struct {
	// NamespaceSelector picks the namespaces that get a copy, among those
	// that accept copies from the Mirror's namespace (the label
	// accept.mirrors.samples.opkit.dev/<the Mirror's namespace>: "true",
	// or the Mirror's name). The Mirror's own namespace never does: the
	// source is there; nor do kube-* and the operator's namespace unless
	// the operator allows them. An empty selector matches every namespace
	// that accepts the copies.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions operators must be In, NotIn, Exists or DoesNotExist"
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
}

// MirrorSpec is what a Mirror copies, and where to.
type MirrorSpec struct {
	// From is the object to copy.
	From From `json:"from"`
	// To is where the copies go.
	To To `json:"to"`
	// ServiceAccountName names the ServiceAccount, in the Mirror's
	// namespace, that the operator reads the source and writes the copies
	// as. Defaults to mirror.
	// +kubebuilder:default=mirror
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// MirrorStatus is v1alpha1's: what the operator last saw and did.
type MirrorStatus = v1alpha1.MirrorStatus

// Mirror copies a ConfigMap or Secret into every namespace that matches a
// selector, and keeps the copies equal to it. It is v1alpha1's Mirror
// reshaped; see the package doc.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=opkit
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters: it labels every copy"
// +kubebuilder:printcolumn:name="ConfigMap",type=string,JSONPath=`.spec.from.configMap.name`
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.from.secret.name`
// +kubebuilder:printcolumn:name="Synced",type=integer,JSONPath=`.status.syncedNamespaces`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Mirror struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MirrorSpec   `json:"spec"`
	Status MirrorStatus `json:"status,omitempty"`
}

// MirrorList is a list of Mirrors.
//
// +kubebuilder:object:root=true
type MirrorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Mirror `json:"items"`
}
