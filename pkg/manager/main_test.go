package manager_test

import (
	"os"
	"testing"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	if off, ok := os.LookupEnv(memLimitChild); ok {
		os.Exit(runMemLimitChild(off))
	}
	if kubeconfig, ok := os.LookupEnv(gcBoundChild); ok {
		os.Exit(runGCBoundChild(kubeconfig))
	}
	testenv.Main(m, testenv.Options{OptionalFeatureGates: map[string]bool{"ShardedListAndWatch": true}}, func(e *testenv.Environment) { env = e })
}
