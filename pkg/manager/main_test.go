package manager_test

import (
	"testing"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{FeatureGates: map[string]bool{"ShardedListAndWatch": true}}, func(e *testenv.Environment) { env = e })
}
