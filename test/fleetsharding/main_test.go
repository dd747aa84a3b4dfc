// Package fleetsharding runs a sharded fleet (fleet.Options.Sharding) as
// three replica processes (./replica) against a real control plane, its
// members namespaces of it, under continuous writes, while one replica is
// killed and another frozen past its lease: no replica reconciles or
// writes a member another owns, recorded per write, and the takeover
// times are reported. docs/fleet.md says what it shows.
package fleetsharding

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
	testenv.Main(m, testenv.Options{}, func(e *testenv.Environment) { env = e })
}
