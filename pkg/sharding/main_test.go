package sharding_test

import (
	"testing"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// shardGate is kube-apiserver's gate for shard selectors: 1.36+ know it.
const shardGate = "ShardedListAndWatch"

// env is this package's control plane, with server-side shard selectors on
// where the server knows them; the tests that need them skip elsewhere.
var env *testenv.Environment

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{OptionalFeatureGates: map[string]bool{shardGate: true}},
		func(e *testenv.Environment) { env = e })
}
