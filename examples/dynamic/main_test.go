package dynamic_test

import (
	"testing"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

var env *testenv.Environment

// One control plane for the package, with the WatchSet CRD and, as a kind
// for WatchSets to name, examples/website's Website CRD installed.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{CRDDirs: []string{"config/crd", "../website/config/crd"}}, func(e *testenv.Environment) { env = e })
}
