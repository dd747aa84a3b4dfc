package sharding

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// The operator's namespace and service account as config/sharded renders
// them.
const (
	operatorNamespace = "mirror-system"
	serviceAccount    = "mirror-controller-manager"
)

// Two replicas run sharded as the service account config/sharded deploys,
// with exactly the RBAC it renders: they share the slots, copy a Mirror,
// and one that leaves deletes its own Lease. No request is forbidden.
func TestShardedRBAC(t *testing.T) {
	w := newWorld(t, 4)
	applyIdentity(t, w.cl)
	dir := t.TempDir()
	g := group{bin: buildOperator(t), name: "rbac", namespace: operatorNamespace,
		kubeconfig: filepath.Join(dir, "kubeconfig"), records: filepath.Join(dir, "reconciles")}
	writeImpersonating(t, g.kubeconfig, "system:serviceaccount:"+operatorNamespace+":"+serviceAccount)

	a, b := g.start(t, "a"), g.start(t, "b")
	eventually(t, 30*time.Second, "two replicas share the slots", func() error { return settled(a, b) })
	eventually(t, 30*time.Second, "every Mirror converges", func() error { return w.converged(t.Context()) })
	b.Signal(t, syscall.SIGTERM)
	if err := b.Wait(t, 30*time.Second); err != nil {
		t.Errorf("b exited with %v after SIGTERM", err)
	}
	eventually(t, 10*time.Second, "a holds every slot", holdAll(a))
	err := w.cl.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: "rbac-b"}, &coordinationv1.Lease{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("b's Lease after it left: %v, want NotFound (b deletes it)", err)
	}
	a.Signal(t, syscall.SIGTERM)
	if err := a.Wait(t, 30*time.Second); err != nil {
		t.Errorf("a exited with %v after SIGTERM", err)
	}
	for _, r := range []*replica{a, b} {
		if r.LogHas("forbidden") {
			t.Errorf("%s logged a forbidden request (log %s)", r.Name, r.Log)
		}
	}
}

// applyIdentity creates the Namespace, ServiceAccount, roles and bindings
// that kubectl kustomize config/sharded renders.
func applyIdentity(t *testing.T, cl client.Client) {
	t.Helper()
	kubectl, err := testenv.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), kubectl, "kustomize", "../../config/sharded")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize config/sharded: %v\n%s", err, stderr.String())
	}
	identity := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
	dec := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("decode config/sharded: %v", err)
		}
		if !slices.Contains(identity, u.GetKind()) {
			continue
		}
		if err := cl.Create(t.Context(), u); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// writeImpersonating writes the control plane's kubeconfig, acting as user.
func writeImpersonating(t *testing.T, path, user string) {
	t.Helper()
	if err := env.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.AuthInfos) == 0 {
		t.Fatal(fmt.Errorf("kubeconfig %s has no user", path))
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}
