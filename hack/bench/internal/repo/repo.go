// Package repo finds the opkit checkout that the benchmarks' module is
// nested in: they build its operators, read its config/ and write into its
// bin/ and bench/.
package repo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Module is the path of opkit's own module.
const Module = "github.com/opkit-dev/opkit"

// Root returns the directory at or above dir that holds opkit's go.mod
// (module Module), passing over the go.mod of a nested module such as
// hack/bench's.
func Root(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && modulePath(b) == Module {
			return d, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("find opkit's module: %w", err)
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("find opkit's module: no go.mod of module %s in %s or any directory above it", Module, dir)
		}
	}
}

// modulePath returns the path the module line of a go.mod names.
func modulePath(gomod []byte) string {
	s := bufio.NewScanner(bytes.NewReader(gomod))
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
