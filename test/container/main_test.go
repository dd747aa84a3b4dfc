// Package container runs the sample operator's container image the way
// config/manager's Deployment runs it, with a real OCI runtime (runc) and
// no kubelet: the image that make image builds (package
// hack/image/ociimage), unpacked into an OCI bundle; the Deployment's
// command, user, read-only root filesystem, no privilege escalation, all
// capabilities dropped, a seccomp profile and its resource limits; the
// ServiceAccount's files where a pod has them, with a token minted for
// config/rbac's ServiceAccount; the host's network namespace, so that the
// operator reaches the test control plane on loopback.
//
// The test needs root, runc, namespaces and cgroups. Where one is missing
// it skips, saying which; with OPKIT_CONTAINER_TEST=require (as .ci/run
// sets it) it fails instead, so that CI cannot pass without running it.
// docs/deploy.md says what this shows and what it does not.
package container

import (
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	// controller-runtime's client logs through its global logger, and
	// complains with a stack trace if none is set.
	ctrllog.SetLogger(logr.Discard())
	testenv.Main(m, testenv.Options{CRDDirs: []string{"../../config/crd/bases"}}, func(e *testenv.Environment) { env = e })
}
