// Package deployed runs the real sample-operator binary as config/ deploys
// it: with the ServiceAccount identity and the RBAC rules that
// 'kubectl kustomize config/default' renders (permissions_test.go), and
// finding its cluster as a pod does (incluster_test.go).
//
// docs/rbac.md is generated here: TestEachRuleIsNeededAndReported fails
// when the checked-in file differs from what it would write, and rewrites
// it when OPKIT_UPDATE_DOCS=1.
package deployed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

var (
	env *testenv.Environment
	// root is the module's root directory.
	root string
	// operatorBin is the sample operator, built as the Dockerfile builds it.
	operatorBin string
)

// TestMain builds the operator and starts one control plane for the
// package. It uses testenv.Start rather than testenv.Main, which exits
// without a way to remove the binary afterwards.
func TestMain(m *testing.M) {
	// controller-runtime's client logs through its global logger, and
	// complains with a stack trace if none is set.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(run(m))
}

func run(m *testing.M) int {
	wd, err := os.Getwd()
	if err == nil {
		root, err = testenv.ModuleRoot(wd)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "deployed: find the module root: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "opkit-deployed-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "deployed: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Built with -tags nolocal, as the Dockerfile and 'make image' build it.
	operatorBin = filepath.Join(dir, "sample-operator")
	build := exec.Command("go", "build", "-tags", "nolocal", "-o", operatorBin, "./cmd/sample-operator")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "deployed: go build sample-operator: %v\n%s", err, out)
		return 1
	}
	start := time.Now()
	env, err = testenv.Start(testenv.Options{CRDDirs: []string{filepath.Join(root, "config", "crd", "bases")}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "deployed: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "deployed: control plane at %s started in %s\n", env.Config().Host, time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "deployed: %v\n", err)
		code = max(code, 1)
	}
	return code
}
