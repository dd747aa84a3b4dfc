package v1beta1_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1beta1"
)

// A Mirror stored as v1alpha1 reads as v1beta1: spec.source becomes
// spec.from, spec.namespaceSelector becomes spec.to.namespaceSelector.
func ExampleMirror_ConvertFrom() {
	stored := &v1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "ca-bundle"},
		Spec: v1alpha1.MirrorSpec{
			Source:            v1alpha1.SourceRef{Kind: v1alpha1.KindSecret, Name: "tls"},
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		},
	}
	m := &v1beta1.Mirror{}
	if err := m.ConvertFrom(stored); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.APIVersion, m.Spec.From.Secret.Name, m.Spec.To.NamespaceSelector.MatchLabels)
	// Output: samples.opkit.dev/v1beta1 tls map[team:a]
}
