package config_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// config/default (and config/cert-manager, which renders the same
// objects) lets into the manager pods' metrics port only namespaces
// labelled metrics: enabled, and into their webhook port only namespaces
// labelled webhook: enabled, over TCP, and nothing else.
func TestNetworkPolicies(t *testing.T) {
	objs := render(t, "default")
	d := one[appsv1.Deployment](t, objs, "Deployment")
	want := map[string]struct {
		port  int32
		label string
	}{
		"mirror-allow-metrics-traffic": {metricsPort, "metrics"},
		"mirror-allow-webhook-traffic": {webhookPort, "webhook"},
	}
	got := all[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy")
	if len(got) != len(want) {
		t.Fatalf("config/default renders %d NetworkPolicies, want %d", len(got), len(want))
	}
	for _, np := range got {
		w, ok := want[np.Name]
		if !ok {
			t.Errorf("unexpected NetworkPolicy %s", np.Name)
			continue
		}
		if np.Namespace != namespace {
			t.Errorf("NetworkPolicy %s is in namespace %q, want %q", np.Name, np.Namespace, namespace)
		}
		sel := labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels)
		if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("NetworkPolicy %s selects pods %v, which the Deployment's %v are not", np.Name, sel, d.Spec.Template.Labels)
		}
		if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes); diff != "" {
			t.Errorf("NetworkPolicy %s policyTypes (-want +got):\n%s", np.Name, diff)
		}
		if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 1 || len(np.Spec.Ingress[0].Ports) != 1 {
			t.Fatalf("NetworkPolicy %s ingress %+v, want one rule from one peer to one port", np.Name, np.Spec.Ingress)
		}
		rule := np.Spec.Ingress[0]
		if from := rule.From[0].NamespaceSelector; from == nil || !cmp.Equal(from.MatchLabels, map[string]string{w.label: "enabled"}) {
			t.Errorf("NetworkPolicy %s lets in namespaces %+v, want those labelled %s: enabled", np.Name, from, w.label)
		}
		if p := rule.Ports[0]; p.Port == nil || p.Port.IntVal != w.port || p.Protocol == nil || *p.Protocol != "TCP" {
			t.Errorf("NetworkPolicy %s opens %+v, want TCP port %d", np.Name, p, w.port)
		}
		if containerPort(d.Spec.Template.Spec.Containers[0], *rule.Ports[0].Port) != w.port {
			t.Errorf("NetworkPolicy %s opens port %d, which the manager container does not serve", np.Name, w.port)
		}
	}
}
