package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// e2eTimeout bounds each step of the end-to-end test, so that a hang fails
// it rather than the whole test binary's timeout.
const e2eTimeout = 15 * time.Minute

// TestScaffold builds opkit, makes a project with it, adds two APIs of its
// own, a controller of Deployments, a defaulting and validating webhook
// (whose validator checks the requester's permissions), another on
// Deployments, one on cert-manager's Certificates (another module's kind), and
// a second version of a kind with its conversion webhook, and runs the project's make test
// (which leaves git's working tree clean) and go build; then make test-e2e, and again without an RBAC marker, which
// must fail naming the refused permission; then renders config/default, builds the image, the installer
// and deploys them (make image, build-installer, install, deploy), renders
// the monitoring component and tests its alert rules (make test-alerts);
// then runs the operator as make run does and checks that it reconciles
// the samples. It also makes a fleet project (opkit init --fleet) and
// vets, builds and unit-tests it. The project holds a copy of this checkout of opkit
// (--opkit-vendor), and is moved alone to a fresh directory, as a CI
// runner's clone, before make test; it uses the control plane of the shared
// per-user cache that opkit envtest fills.
func TestScaffold(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the end-to-end scaffold test makes and tests a whole project")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	opkit := filepath.Join(t.TempDir(), "opkit")
	shell(t, root, "go", "build", "-o", opkit, "./cmd/opkit")
	dir := filepath.Join(t.TempDir(), "acme-operator")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	shell(t, dir, opkit, "init", "--module", "example.com/acme-operator", "--domain", "acme.example", "--opkit-vendor", root)
	shell(t, dir, opkit, "create", "api", "--group", "ship", "--version", "v1alpha1", "--kind", "Frigate")
	shell(t, dir, opkit, "create", "api", "--group", "ship", "--version", "v1alpha1", "--kind", "Admiral", "--namespaced=false")
	// As the project's README says: the opkit its go.mod requires.
	shell(t, dir, "go", "tool", "opkit", "create", "api", "--group", "apps", "--version", "v1", "--kind", "Deployment", "--resource=false")
	shell(t, dir, opkit, "create", "webhook", "--group", "ship", "--version", "v1alpha1", "--kind", "Frigate", "--defaulting", "--validation", "--requester-check")
	// A webhook on a kind the project does not own, whose controller it has.
	shell(t, dir, opkit, "create", "webhook", "--group", "apps", "--version", "v1", "--kind", "Deployment", "--defaulting", "--validation")
	// A webhook on another module's custom resource: cert-manager's
	// Certificate, whose CRD its module holds and the tests install.
	shell(t, dir, opkit, "create", "webhook", "--group", "cert-manager.io", "--version", "v1", "--kind", "Certificate", "--validation",
		"--external-api-path", "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1", "--external-api-module", "github.com/cert-manager/cert-manager@v1.21.2")
	// A second version of Frigate, unserved until its conversion, through
	// the hub v1alpha1 (which stays stored), serves it.
	shell(t, dir, opkit, "create", "api", "--group", "ship", "--version", "v1", "--kind", "Frigate", "--controller=false")
	shell(t, dir, opkit, "create", "webhook", "--group", "ship", "--version", "v1alpha1", "--kind", "Frigate", "--conversion")
	// As a fresh clone on a CI runner: the project alone, in another
	// directory, where no path outside it resolves.
	dir = alone(t, dir, root)
	shell(t, dir, "git", "init", "-q")
	shell(t, dir, "git", "add", "-A")
	shell(t, dir, "git", "-c", "user.name=opkit", "-c", "user.email=opkit@example.com", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "opkit init")
	shell(t, dir, "make", "test")
	checkClean(t, dir)
	t.Logf("opkit init to a passing make test: %s", time.Since(start).Round(time.Second))
	shell(t, dir, "go", "build", "./...")

	t.Run("fleet", func(t *testing.T) { testFleetProject(t, opkit, root) })
	t.Run("test-e2e", func(t *testing.T) { testE2E(t, dir) })
	t.Run("kustomize", func(t *testing.T) { testKustomize(t, dir) })
	t.Run("image", func(t *testing.T) { testImage(t, dir) })
	t.Run("build-installer", func(t *testing.T) { testBuildInstaller(t, dir) })
	t.Run("deploy", func(t *testing.T) { testDeploy(t, dir) })
	t.Run("prometheus", func(t *testing.T) { testPrometheus(t, dir) })
	t.Run("make run", func(t *testing.T) {
		shell(t, dir, "make", "build")
		testLocal(t, dir)
	})
}

// testFleetProject makes a fleet operator with opkit init --fleet, then
// vets, builds and runs the unit tests of its cmd/ (which need no control
// plane). Its go.mod points at the checkout itself (--opkit-replace), so
// the go command reuses what it compiled of opkit for the checkout.
func testFleetProject(t *testing.T, opkit, root string) {
	dir := filepath.Join(t.TempDir(), "fleet-operator")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shell(t, dir, opkit, "init", "--module", "example.com/fleet-operator", "--fleet", "--opkit-replace", root)
	shell(t, dir, "go", "vet", "./...")
	shell(t, dir, "go", "build", "./...")
	shell(t, dir, "go", "test", "-count=1", "./cmd/")
}

// shell runs name in dir and fails t, with the output, if it fails.
func shell(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = projectEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
}

// projectEnv is the environment without what a make that runs this test
// passes down to the project's own make (its variables, such as
// TEST_FLAGS, in MAKEFLAGS).
func projectEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "MAKEFLAGS" || name == "MFLAGS" || name == "MAKELEVEL"
	})
}

// testLocal runs the operator with --local, waits for both samples to be
// Ready, then stops it with SIGINT and checks that it exits 0.
func testLocal(t *testing.T, dir string) {
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "bin", "acme-operator"), "--local", "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	cmd.Dir = dir
	cmd.Env = projectEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }() // a no-op once it exited
	kubeconfig, rest := kubeconfigLine(stdout)
	output := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(rest)
		output <- string(b)
	}()
	if kubeconfig == "" {
		t.Fatalf("the operator printed no kubeconfig; stderr:\n%s", stderr.String())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gv := schema.GroupVersion{Group: "ship.acme.example", Version: "v1alpha1"}
	waitReady(t, dyn.Resource(gv.WithResource("frigates")).Namespace("default"), "frigate-sample")
	waitReady(t, dyn.Resource(gv.WithResource("admirals")), "admiral-sample")

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	out := <-output
	if err != nil {
		t.Fatalf("the operator exited with %v after SIGINT; stdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	if !strings.Contains(out, "Stopping the local control plane") {
		t.Errorf("the operator did not say it stopped the control plane:\n%s", out)
	}
}

// kubeconfigLine reads the operator's standard output up to the line
// "export KUBECONFIG=<path>" and returns the path and the rest of the
// output.
func kubeconfigLine(r io.Reader) (string, io.Reader) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if path, ok := strings.CutPrefix(strings.TrimSpace(line), "export KUBECONFIG="); ok {
			return path, br
		}
		if err != nil {
			return "", br
		}
	}
}

// waitReady watches the object name until its Ready condition is True.
func waitReady(t *testing.T, res dynamic.ResourceInterface, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// Without a resourceVersion the watch starts with the object as it is.
	w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for e := range w.ResultChan() {
		u, ok := e.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		var status struct {
			Conditions []metav1.Condition `json:"conditions"`
		}
		if m, found, _ := unstructured.NestedMap(u.Object, "status"); found {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &status); err != nil {
				t.Fatal(err)
			}
		}
		if apimeta.IsStatusConditionTrue(status.Conditions, "Ready") {
			return
		}
	}
	t.Fatalf("%s never became Ready: %v", name, context.Cause(ctx))
}
