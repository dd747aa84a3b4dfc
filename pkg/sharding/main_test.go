package sharding_test

import (
	"testing"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// env is this package's control plane, with server-side shard selectors on.
var env *testenv.Environment

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{FeatureGates: map[string]bool{"ShardedListAndWatch": true}},
		func(e *testenv.Environment) { env = e })
}
