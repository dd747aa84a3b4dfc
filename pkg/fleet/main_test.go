package fleet_test

import (
	"testing"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// env is the control plane of the integration tests, with
// cluster-inventory-api's ClusterProfile CRD; the unit tests do not use it.
var env *testenv.Environment

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{CRDDirs: []string{"testdata/crd"}}, func(e *testenv.Environment) { env = e })
}
