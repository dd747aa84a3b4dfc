package fleet_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// A ClusterProfile of the inventory is a member, reached with the token
// cluster-inventory-api's own secretreader credential plugin reads from
// the hub: the member's requests are that token's identity. A change to
// the profile's conditions engages nothing again; an access provider the
// operator does not configure, or the profile's deletion, disengages it.
func TestClusterProfiles(t *testing.T) {
	ctx := t.Context()
	plugin := buildSecretReader(t)
	hub := env.Namespace(t)

	// The member's identity: a ServiceAccount that may do anything, whose
	// token the plugin finds in the Secret hub/east.
	sa := types.NamespacedName{Namespace: hub, Name: "east-member"}
	if _, err := env.Client().CoreV1().ServiceAccounts(hub).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa.Name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet-test-" + hub},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: hub, Name: sa.Name}},
	}
	if _, err := env.Client().RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client().RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	saConfig, err := env.ServiceAccountConfig(ctx, sa, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client().CoreV1().Secrets(hub).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "east"},
		Data:       map[string][]byte{"token": []byte(saConfig.BearerToken)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The plugin reads the hub as the operator does, in the namespace of
	// its kubeconfig's context.
	hubKubeconfig := filepath.Join(t.TempDir(), "hub.kubeconfig")
	if err := os.WriteFile(hubKubeconfig, testKubeconfig(t, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := setKubeconfigNamespace(hubKubeconfig, hub); err != nil {
		t.Fatal(err)
	}
	accessConfig := access.New([]access.Provider{{
		Name: "secretreader",
		ExecConfig: &clientcmdapi.ExecConfig{
			APIVersion:         "client.authentication.k8s.io/v1",
			Command:            plugin,
			Env:                []clientcmdapi.ExecEnvVar{{Name: "KUBECONFIG", Value: hubKubeconfig}},
			ProvideClusterInfo: true,
			InteractiveMode:    clientcmdapi.NeverExecInteractiveMode,
		},
	}})

	scheme := runtime.NewScheme()
	if err := inventoryv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	hubClient, err := client.New(env.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	profile := &inventoryv1alpha1.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: hub, Name: "east"},
		Spec:       inventoryv1alpha1.ClusterProfileSpec{ClusterManager: inventoryv1alpha1.ClusterManager{Name: "opkit-test"}},
	}
	if err := hubClient.Create(ctx, profile); err != nil {
		t.Fatal(err)
	}
	profile.Status = inventoryv1alpha1.ClusterProfileStatus{
		Conditions: []metav1.Condition{},
		AccessProviders: []inventoryv1alpha1.AccessProvider{{
			Name: "secretreader",
			Cluster: clientcmdv1.Cluster{
				Server:                   env.Config().Host,
				CertificateAuthorityData: env.Config().CAData,
				Extensions: []clientcmdv1.NamedExtension{{
					Name:      "client.authentication.k8s.io/exec",
					Extension: runtime.RawExtension{Raw: []byte(`{"clusterName":"east"}`)},
				}},
			},
		}},
	}
	if err := hubClient.Status().Update(ctx, profile); err != nil {
		t.Fatal(err)
	}

	var engagements atomic.Int32
	log := funcr.New(func(_, args string) {
		if strings.Contains(args, `"Member cluster engaged"`) && strings.Contains(args, `"cluster"="east"`) {
			engagements.Add(1)
		}
	}, funcr.Options{})
	f := newFleet(t, fleet.Options{Logger: log, Providers: []fleet.Provider{fleet.ClusterProfiles{
		Config: env.Config(), Namespace: hub, Access: accessConfig,
	}}})
	cms, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runFleet(t, f, cms)
	waitEngaged(t, f, "east", true)
	ns := env.Namespace(t)
	if _, err := env.Client().CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "source"}, Data: map[string]string{"v": "east"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCopy(t, ns, "east")

	east, err := f.Cluster("east")
	if err != nil {
		t.Fatal(err)
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := east.Client().Create(ctx, review); err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + hub + ":" + sa.Name; review.Status.UserInfo.Username != want {
		t.Errorf("the member's requests are made as %q, want %q, the token the credential plugin read", review.Status.UserInfo.Username, want)
	}

	// A condition changes, then the only access provider offered becomes
	// one the operator does not know: the member is disengaged, and was
	// not engaged again in between (a profile's updates arrive in order).
	profile.Status.Conditions = []metav1.Condition{{
		Type: inventoryv1alpha1.ClusterConditionControlPlaneHealthy, Status: metav1.ConditionTrue,
		Reason: "Healthy", LastTransitionTime: metav1.Now(),
	}}
	if err := hubClient.Status().Update(ctx, profile); err != nil {
		t.Fatal(err)
	}
	profile.Status.AccessProviders[0].Name = "unknown"
	if err := hubClient.Status().Update(ctx, profile); err != nil {
		t.Fatal(err)
	}
	waitEngaged(t, f, "east", false)
	if n := engagements.Load(); n != 1 {
		t.Errorf("member east engaged %d times; want once, a change of the profile's conditions engaging nothing again", n)
	}

	profile.Status.AccessProviders[0].Name = "secretreader"
	if err := hubClient.Status().Update(ctx, profile); err != nil {
		t.Fatal(err)
	}
	waitEngaged(t, f, "east", true)
	if err := hubClient.Delete(ctx, profile); err != nil {
		t.Fatal(err)
	}
	waitEngaged(t, f, "east", false)
}

// buildSecretReader builds cluster-inventory-api's secretreader credential
// plugin, at the version go.mod pins, and returns its path.
func buildSecretReader(t *testing.T) string {
	t.Helper()
	root, err := testenv.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "secretreader")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", out, "sigs.k8s.io/cluster-inventory-api/plugins/secretreader/cmd/plugin")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the secretreader credential plugin: %v\n%s", err, b)
	}
	return out
}

// setKubeconfigNamespace sets the namespace of the current context of the
// kubeconfig at path.
func setKubeconfigNamespace(path, namespace string) error {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return err
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = namespace
	return clientcmd.WriteToFile(*cfg, path)
}
