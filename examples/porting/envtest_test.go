package porting_test

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

var env *testenv.Environment

// One control plane for the package, with the Mirror CRD installed; it
// runs this guide's reconcilers in TestWebReconciler and
// TestMirrorReconciler.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{CRDDirs: []string{"../../config/crd/bases"}}, func(e *testenv.Environment) { env = e })
}

// Before: controller-runtime's envtest, started and stopped by hand, with
// binaries that setup-envtest downloads.
func Example_envtestControllerRuntime() {
	var cfg *rest.Config
	_ = func(m *testing.M) { // func TestMain(m *testing.M)
		testEnv := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}}
		var err error
		if cfg, err = testEnv.Start(); err != nil {
			panic(err)
		}
		code := m.Run()
		if err := testEnv.Stop(); err != nil {
			panic(err)
		}
		os.Exit(code)
	}
	_ = cfg
}
