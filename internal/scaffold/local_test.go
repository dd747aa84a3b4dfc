package scaffold

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The project's make run refuses a taken metrics or probe port before it
// starts a control plane: its cmd's TestLocalRefusesATakenPort, run here
// (and by the project's make test). It runs go mod tidy, so it needs the
// module proxy or a warm module cache.
func TestLocalRefusesATakenPort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and tests a generated project")
	}
	dir := newProject(t)
	for _, args := range [][]string{{"go", "mod", "tidy"}, {"go", "test", "-count=1", "-run", "TestLocalRefusesATakenPort", "./cmd"}} {
		cmd := exec.CommandContext(t.Context(), args[0], args[1:]...)
		cmd.Dir = dir
		// Not the GOFLAGS a make of opkit passes down.
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
