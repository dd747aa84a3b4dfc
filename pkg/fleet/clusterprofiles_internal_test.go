package fleet

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"
)

func TestClusterProfileMemberConfig(t *testing.T) {
	plugin := &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/opt/plugins/token"}
	p := ClusterProfiles{Access: access.New([]access.Provider{{Name: "first", ExecConfig: plugin}, {Name: "second", ExecConfig: plugin}})}
	profile := func(offered ...inventoryv1alpha1.AccessProvider) *inventoryv1alpha1.ClusterProfile {
		return &inventoryv1alpha1.ClusterProfile{
			ObjectMeta: metav1.ObjectMeta{Namespace: "inventory", Name: "east"},
			Status:     inventoryv1alpha1.ClusterProfileStatus{AccessProviders: offered},
		}
	}
	at := func(name, server string) inventoryv1alpha1.AccessProvider {
		return inventoryv1alpha1.AccessProvider{Name: name, Cluster: clientcmdv1.Cluster{Server: server}}
	}

	cfg, _, err := p.memberConfig(profile(at("other", "https://other:6443"), at("second", "https://second:6443"), at("first", "https://first:6443")))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://first:6443" || cfg.ExecProvider == nil || cfg.ExecProvider.Command != plugin.Command {
		t.Errorf("config: host %q, exec %+v; want the first configured provider's server and the configured plugin", cfg.Host, cfg.ExecProvider)
	}

	_, _, err = p.memberConfig(profile(at("other", "https://other:6443")))
	if err == nil {
		t.Fatal("a profile offering no configured provider: no error")
	}
	for _, want := range []string{"inventory/east", `"other"`, `"first"`, `"second"`, "add one of them"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}

	if _, _, err := p.memberConfig(profile(at("first", ""))); err == nil || !strings.Contains(err.Error(), "no server") {
		t.Errorf("a provider without a server: %v, want an error saying so", err)
	}
}
