package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrBinariesMissing is wrapped by the error Start returns when kube-apiserver
// or etcd cannot be found.
var ErrBinariesMissing = errors.New("control plane binaries missing")

// binaries is where the control plane's programs are.
type binaries struct {
	apiServer string
	etcd      string
}

// findBinaries resolves the binary directory in order: explicit dir, the
// KUBEBUILDER_ASSETS directory, bin/k8s/<version> under the module root found
// from workDir. It checks that both programs exist and are executable.
func findBinaries(dir, assets, workDir, version string) (binaries, error) {
	var source string
	switch {
	case dir != "":
		source = "Options.BinaryDir"
	case assets != "":
		dir, source = assets, "KUBEBUILDER_ASSETS"
	default:
		root, err := ModuleRoot(workDir)
		if err != nil {
			return binaries{}, fmt.Errorf("find control plane binaries: %w; set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd", err)
		}
		dir, source = filepath.Join(root, "bin", "k8s", version), "the module root"
	}
	b := binaries{
		apiServer: filepath.Join(dir, "kube-apiserver"),
		etcd:      filepath.Join(dir, "etcd"),
	}
	for _, p := range []string{b.apiServer, b.etcd} {
		if err := checkExecutable(p); err != nil {
			return binaries{}, fmt.Errorf("%w: %v (directory from %s); run 'make envtest' (hack/setup-envtest.sh) in the opkit repository to build kube-apiserver and etcd v%s, or point KUBEBUILDER_ASSETS at a directory holding both",
				ErrBinariesMissing, err, source, version)
		}
	}
	return b, nil
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// ModuleRoot returns the nearest directory at or above dir that holds a
// go.mod: the root of the module a test or "make run" runs in, where bin/
// and config/ are.
func ModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or any directory above it", dir)
		}
	}
}
