package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: "samples.opkit.dev", Version: "v1alpha1"}

// SchemeGroupVersion is GroupVersion under the name that the generated
// applyconfiguration/utils.go refers to.
var SchemeGroupVersion = GroupVersion

// AddToScheme adds the API's types to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Mirror{}, &MirrorList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Source kinds a Mirror copies.
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
)

// SourceRef names the object a Mirror copies, in the Mirror's namespace.
type SourceRef struct {
	// Kind of the source: ConfigMap or Secret. Defaults to ConfigMap.
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	// +kubebuilder:default=ConfigMap
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the source, in the Mirror's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// MirrorSpec is what a Mirror copies, and where to.
type MirrorSpec struct {
	// Source is the object to copy.
	Source SourceRef `json:"source"`
	// NamespaceSelector picks the namespaces that get a copy, among those
	// that accept copies from the Mirror's namespace (the label
	// accept.mirrors.samples.opkit.dev/<the Mirror's namespace>: "true",
	// or the Mirror's name). The Mirror's own namespace never does: the
	// source is there; nor do kube-* and the operator's namespace unless
	// the operator allows them. An empty selector matches every namespace
	// that accepts the copies.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions operators must be In, NotIn, Exists or DoesNotExist"
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
	// ServiceAccountName names the ServiceAccount, in the Mirror's
	// namespace, that the operator acts as: it reads the source and writes
	// every copy as that ServiceAccount, so the API server lets a Mirror
	// do only what the ServiceAccount's RBAC allows. Only a user who may
	// impersonate the ServiceAccount may name it (the admission policy
	// mirror-service-account), and the operator may act as it only where
	// the namespace's owner allowed it (docs/mirror-tenancy.md). Defaults
	// to mirror.
	// +kubebuilder:default=mirror
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// DefaultServiceAccountName is the ServiceAccount a Mirror acts as when its
// spec names none.
const DefaultServiceAccountName = "mirror"

// Condition types and reasons of a Mirror.
const (
	// ConditionReady is True when every selected namespace holds an
	// up-to-date copy.
	ConditionReady = "Ready"

	ReasonSynced         = "Synced"
	ReasonSourceNotFound = "SourceNotFound"
	ReasonInvalidSpec    = "InvalidSpec"
	ReasonConflict       = "Conflict"
	ReasonSyncFailed     = "SyncFailed"
	// ReasonSourceRefused: the source is a Secret of a type the operator
	// does not copy (its flag --allow-secret-types); no copy is kept.
	ReasonSourceRefused = "SourceRefused"
	// ReasonTooManyTargets: more namespaces match and accept copies than
	// the operator copies one Mirror into (its flag --max-targets); the
	// first of them by name hold copies.
	ReasonTooManyTargets = "TooManyTargets"
	// ReasonIdentityUnpinned: the admission policy that pins the
	// ServiceAccount a Mirror may name is missing (the operator's flag
	// --identity-policy): the operator acts for no Mirror until it is back.
	ReasonIdentityUnpinned = "IdentityUnpinned"
)

// MirrorStatus is what the operator last saw and did.
//
// It counts the namespaces it copies into and never names them: the
// Mirror's creator may be unable to list them. A count says no more than
// those namespaces chose to tell: each target accepts copies from the
// Mirror's namespace (the label accept.mirrors.samples.opkit.dev/<the
// Mirror's namespace>), and a namespace that does not is not counted.
type MirrorStatus struct {
	// ObservedGeneration is the generation of the spec the status is about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, with reason Synced, SourceNotFound, InvalidSpec,
	// SourceRefused, TooManyTargets, Conflict, SyncFailed or
	// IdentityUnpinned. Messages name
	// no namespace but the Mirror's own.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// SyncedNamespaces counts the namespaces holding an up-to-date copy.
	// +optional
	SyncedNamespaces int32 `json:"syncedNamespaces,omitempty"`
	// Conflicts counts the target namespaces holding an object of the
	// source's name that this Mirror does not own, and so left untouched;
	// each such object's namespace is told by a Warning Event about the
	// object (reason MirrorConflict).
	// +optional
	Conflicts int32 `json:"conflicts,omitempty"`
}

// Mirror copies a ConfigMap or Secret into every namespace that matches a
// selector, and keeps the copies equal to it.
//
// Its name labels every copy, and a label value holds at most 63
// characters.
//
// v1alpha1 is the storage version and the conversion hub: Mirrors
// written as v1beta1 are stored as v1alpha1, so objects written before
// v1beta1 existed need no migration.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=opkit
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters: it labels every copy"
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.source.kind`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source.name`
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
