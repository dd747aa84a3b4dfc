// Package faults runs the Mirror sample operator against a real control
// plane while things go wrong: bad input, concurrent writers, leader
// failover, SIGTERM under load, dropped connections, expired watches,
// control-plane outages and a client saturated by its own load. With
// OPKIT_OUTAGE_COMPARE=1 it also runs the outages as processes, on opkit
// and on controller-runtime side by side (compare_test.go).
// docs/reliability.md says what each test shows.
package faults

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
