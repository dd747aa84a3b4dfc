package mirror_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// kubectl returns the kubectl that 'make envtest' builds beside the control
// plane, and a kubeconfig for the test control plane.
func kubectl(t *testing.T) (bin, kubeconfig string) {
	t.Helper()
	dir, err := testenv.BinaryDir(testenv.DefaultVersion)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "kubectl")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no kubectl at %s: run 'make envtest', which builds it beside kube-apiserver", bin)
	}
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	return bin, kubeconfig
}

// The samples in config/samples work as a user applies them with kubectl:
// the sample Mirror copies its ConfigMap into the team-a namespaces and
// reports Ready; deleting the samples removes the copies.
func TestKubectlApplySamples(t *testing.T) {
	w := operator(t)
	bin, kubeconfig := kubectl(t)
	run := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		t.Logf("kubectl %v:\n%s", args, out)
	}
	run("apply", "-k", "../../../config/samples")
	for _, ns := range []string{"team-a-web", "team-a-api"} {
		w.eventually("a copy in "+ns, func() error { _, err := w.copyData(ns, "ca-bundle"); return err })
	}
	run("wait", "--for=condition=Ready", "--timeout=30s", "-n", "platform", "mirror/ca-bundle")
	run("get", "mirrors", "-A")
	run("delete", "-k", "../../../config/samples", "--wait=false")
	run("wait", "--for=delete", "--timeout=30s", "-n", "platform", "mirror/ca-bundle")
	for _, ns := range []string{"team-a-web", "team-a-api"} {
		if _, err := w.copyData(ns, "ca-bundle"); err == nil {
			t.Errorf("the copy in %s outlived its Mirror", ns)
		}
	}
}
