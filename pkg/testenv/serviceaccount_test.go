package testenv

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// ApplyRBAC creates the identity kustomize renders and nothing else, and
// a token of its ServiceAccount is allowed what its Role grants only, at
// once and through a written kubeconfig.
func TestApplyRBACAndServiceAccountConfig(t *testing.T) {
	if _, err := Kubectl(); err != nil {
		t.Skipf("no kubectl to render kustomize with: %v", err)
	}
	ctx := t.Context()
	sas, err := env.ApplyRBAC(ctx, "testdata/rbac")
	if err != nil {
		t.Fatal(err)
	}
	want := []types.NamespacedName{{Namespace: "reader-system", Name: "reader-controller-manager"}}
	if diff := cmp.Diff(want, sas); diff != "" {
		t.Fatalf("ServiceAccounts (-want +got):\n%s", diff)
	}
	if _, err := env.Client().CoreV1().ConfigMaps("reader-system").Get(ctx, "reader-left-out", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the rendered ConfigMap: %v, want it left out", err)
	}
	// Applying again leaves what exists.
	if _, err := env.ApplyRBAC(ctx, "testdata/rbac"); err != nil {
		t.Fatal(err)
	}

	cfg, err := env.ServiceAccountConfig(ctx, sas[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.CertData) != 0 || cfg.BearerToken == "" {
		t.Fatalf("config holds a client certificate (%v) or no token (%q)", len(cfg.CertData) != 0, cfg.BearerToken)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	fromFile, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(fromFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("reader-system").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list configmaps as the ServiceAccount: %v, want it allowed", err)
	}
	_, err = cs.CoreV1().Secrets("reader-system").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("list secrets as the ServiceAccount: %v, want Forbidden", err)
	}
}
