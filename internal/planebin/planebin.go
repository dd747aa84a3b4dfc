// Package planebin says which Kubernetes version's control plane opkit
// builds and tests against by default, and where "opkit envtest" puts its
// binaries: what pkg/testenv, which runs them, and internal/envtest and
// internal/scaffold, which build them and pin a project to them, share.
package planebin

import (
	"fmt"
	"os"
	"path/filepath"
)

// DefaultVersion is the Kubernetes version whose binaries "opkit envtest"
// (make envtest) builds and testenv.Start looks for.
const DefaultVersion = "1.37.2"

// SharedDir returns the per-user directory that "opkit envtest" builds
// the binaries of Kubernetes version into, shared by every project on the
// machine: $XDG_CACHE_HOME/opkit/k8s/<version>, else
// ~/.cache/opkit/k8s/<version> (os.UserCacheDir's choice elsewhere).
func SharedDir(version string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the shared control plane directory: %w (set XDG_CACHE_HOME or HOME)", err)
	}
	return filepath.Join(base, "opkit", "k8s", version), nil
}
