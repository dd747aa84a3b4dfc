package scaffold

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// opkitModule is opkit's module path.
const opkitModule = "github.com/opkit-dev/opkit"

// runIn runs a command in dir; its error carries the command's output.
func runIn(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("run %s %s in %s: %w:\n%s", name, strings.Join(args, " "), dir, err, out)
	}
	return nil
}

// checkOpkitCheckout refuses a --opkit-replace or --opkit-vendor (flag)
// directory that does not hold the opkit module: go mod tidy would fail
// later, and less clearly.
func checkOpkitCheckout(flag, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || modfile.ModulePath(b) != opkitModule {
		return &InputError{Input: flag, Value: dir, Allowed: "it must be a checkout of opkit: a directory whose go.mod declares module github.com/opkit-dev/opkit"}
	}
	return nil
}
