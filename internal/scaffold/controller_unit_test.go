package scaffold

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Each scaffolded controller comes with a unit test that builds its
// reconciler from its pieces (a cachetest Lister, controller-runtime's fake
// client) and runs it without using a cluster: on a namespaced and a
// cluster-scoped kind of the project's own, and on a namespaced and a
// cluster-scoped built-in kind. The generated tests pass; and a
// constructor that leaves the Lister nil, the mistake that crashed the
// unit tests ported from controller-runtime (issue 31), fails them. It
// runs go mod tidy and make manifests, so it needs the module proxy or a
// warm module cache, and the package's TestMain starts a control plane
// for the integration tests beside them.
func TestControllerUnitTests(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and tests a generated project")
	}
	dir := newProject(t)
	kinds := map[string]APIOptions{
		"Frigate":    frigateV1,
		"Admiral":    {Group: "ship", Version: "v1", Kind: "Admiral", Resource: true, Controller: true},
		"Deployment": {Group: "apps", Version: "v1", Kind: "Deployment", Namespaced: true, Controller: true},
		"Namespace":  {Group: "", Version: "v1", Kind: "Namespace", Controller: true},
	}
	for _, k := range []string{"Frigate", "Admiral", "Deployment", "Namespace"} {
		addAPI(t, dir, kinds[k])
		if _, err := os.Stat(filepath.Join(dir, controllerDir, strings.ToLower(k)+"_controller_unit_test.go")); err != nil {
			t.Fatalf("create api of %s wrote no unit test: %v", k, err)
		}
	}
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=") // not the GOFLAGS a make of opkit passes down
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{{"go", "mod", "tidy", "-e"}, {"make", "manifests"}, {"go", "mod", "tidy"}} {
		if out, err := run(args...); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	unitTests := []string{"go", "test", "-count=1", "-v", "-run", "ReconcilerUnit$", "./" + controllerDir}
	out, err := run(unitTests...)
	if err != nil {
		t.Fatalf("the generated unit tests fail: %v\n%s", err, out)
	}
	for _, want := range []string{
		"--- PASS: TestFrigateReconcilerUnit/", "--- PASS: TestAdmiralReconcilerUnit/",
		"--- PASS: TestDeploymentReconcilerUnit/", "--- PASS: TestNamespaceReconcilerUnit/",
		"--- PASS: TestFrigateReconcilerUnit/a_read_fails", "--- PASS: TestFrigateReconcilerUnit/the_status_write_fails",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the generated unit tests' output lacks %q:\n%s", want, out)
		}
	}

	// The reconciler built without its Lister.
	path := filepath.Join(dir, controllerDir, "frigate_controller.go")
	src := readFile(t, dir, filepath.Join(controllerDir, "frigate_controller.go"))
	broken := strings.Replace(src, "Frigates: lister, ", "", 1)
	if broken == src {
		t.Fatalf("found no Frigates: lister in NewFrigateReconciler:\n%s", src)
	}
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run("go", "test", "-count=1", "-run", "TestFrigateReconcilerUnit", "./"+controllerDir)
	if err == nil || !strings.Contains(out, "TestFrigateReconcilerUnit") || !strings.Contains(out, "nil pointer dereference") {
		t.Errorf("with NewFrigateReconciler leaving the Lister nil, the unit test = %v, want a failure naming it and the nil pointer:\n%s", err, out)
	}
}
