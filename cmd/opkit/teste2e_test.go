package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testE2E runs the project's make test-e2e, then again without the
// Frigate controller's marker for its status: it must fail, naming the
// verb and resource the API server refused the operator.
func testE2E(t *testing.T, dir string) {
	shell(t, dir, "make", "test-e2e")

	controller := filepath.Join(dir, "internal", "controller", "frigate_controller.go")
	orig, err := os.ReadFile(controller)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.SplitAfter(string(orig), "\n") {
		if !strings.Contains(line, "+kubebuilder:rbac:") || !strings.Contains(line, "resources=frigates/status") {
			kept = append(kept, line)
		}
	}
	if len(kept) == len(strings.SplitAfter(string(orig), "\n")) {
		t.Fatalf("%s has no +kubebuilder:rbac marker for frigates/status", controller)
	}
	if err := os.WriteFile(controller, []byte(strings.Join(kept, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(controller, orig, 0o644); err != nil {
			t.Error(err)
		}
		// t.Context has ended by now: shell cannot run it.
		cmd := exec.Command("make", "manifests")
		cmd.Dir, cmd.Env = dir, projectEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("make manifests with the marker back: %v\n%s", err, out)
		}
	})
	shell(t, dir, "make", "manifests")
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "test-e2e")
	cmd.Dir = dir
	cmd.Env = projectEnv()
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("make test-e2e passed without the marker for frigates/status:\n%s", out)
	}
	want := `cannot patch resource \"frigates/status\"`
	if !bytes.Contains(out, []byte(want)) || !bytes.Contains(out, []byte("the API server refused the operator")) {
		t.Errorf("make test-e2e failed (%v) without saying the API server refused %s:\n%s", err, want, out)
	}
}
