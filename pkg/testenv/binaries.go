package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/opkit-dev/opkit/internal/planebin"
)

// ErrBinariesMissing is wrapped by the error Start returns when kube-apiserver
// or etcd cannot be found.
var ErrBinariesMissing = errors.New("control plane binaries missing")

// envtestCommand is the command that builds the control plane's binaries
// into SharedBinaryDir: "make envtest" in opkit's repository and in a
// project opkit scaffolded runs it.
const envtestCommand = "go run github.com/opkit-dev/opkit/cmd/opkit envtest"

// binaries is where the control plane's programs are.
type binaries struct {
	dir       string
	apiServer string
	etcd      string
}

// SharedBinaryDir returns the per-user directory that "opkit envtest"
// builds the binaries of Kubernetes version into, shared by every project
// on the machine: $XDG_CACHE_HOME/opkit/k8s/<version>, else
// ~/.cache/opkit/k8s/<version> (os.UserCacheDir's choice elsewhere).
func SharedBinaryDir(version string) (string, error) {
	return planebin.SharedDir(version)
}

// BinaryDir returns the directory Start takes kube-apiserver and etcd
// from, when Options.BinaryDir is not set: KUBEBUILDER_ASSETS when set,
// else bin/k8s/<version>/ under the nearest directory at or above the
// working directory that holds a go.mod, if it holds both, else
// SharedBinaryDir(version). kubectl, when built, is in the same directory.
// The error wraps ErrBinariesMissing and says how to build them.
func BinaryDir(version string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	b, err := findBinaries("", os.Getenv("KUBEBUILDER_ASSETS"), wd, version)
	return b.dir, err
}

// findBinaries resolves the binary directory in order: explicit dir, the
// KUBEBUILDER_ASSETS directory, bin/k8s/<version> under the module root
// found from workDir if both programs are there, the shared directory. It
// checks that both programs exist and are executable.
func findBinaries(dir, assets, workDir, version string) (binaries, error) {
	var source string
	var tried []string
	switch {
	case dir != "":
		source = "Options.BinaryDir"
	case assets != "":
		dir, source = assets, "KUBEBUILDER_ASSETS"
	default:
		if root, err := ModuleRoot(workDir); err == nil {
			local := filepath.Join(root, "bin", "k8s", version)
			if in(local).check() == nil {
				return in(local), nil
			}
			tried = append(tried, local)
		}
		shared, err := SharedBinaryDir(version)
		if err != nil {
			return binaries{}, fmt.Errorf("%w: %w; set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd", ErrBinariesMissing, err)
		}
		dir, source = shared, "the shared directory"
	}
	b := in(dir)
	if err := b.check(); err != nil {
		also := ""
		if len(tried) > 0 {
			also = fmt.Sprintf(", nor in %s", strings.Join(tried, ", "))
		}
		return binaries{}, fmt.Errorf("%w: %v (directory from %s%s); run 'make envtest' (%s) to build kube-apiserver, etcd and kubectl v%s from the Go module proxy into the shared directory, or point KUBEBUILDER_ASSETS at a directory holding kube-apiserver and etcd",
			ErrBinariesMissing, err, source, also, envtestCommand, version)
	}
	return b, nil
}

func in(dir string) binaries {
	return binaries{dir: dir, apiServer: filepath.Join(dir, "kube-apiserver"), etcd: filepath.Join(dir, "etcd")}
}

func (b binaries) check() error {
	for _, p := range []string{b.apiServer, b.etcd} {
		if err := checkExecutable(p); err != nil {
			return err
		}
	}
	return nil
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

// Kubectl returns the kubectl that "opkit envtest" builds beside the
// control plane of the version Start runs by default (Version; in
// BinaryDir's directory), for tests that drive the control plane as a
// user would. The error says how to build it.
func Kubectl() (string, error) {
	v, err := Version()
	if err != nil {
		return "", err
	}
	dir, err := BinaryDir(v)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "kubectl")
	if err := checkExecutable(p); err != nil {
		return "", fmt.Errorf("%w: %v; run 'make envtest' (%s) to build it beside kube-apiserver", ErrBinariesMissing, err, envtestCommand)
	}
	return p, nil
}
