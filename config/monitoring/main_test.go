// Package monitoring_test checks the dashboard and alert rules in this
// directory against opkit itself: the two forms of the rules agree, every
// PromQL expression parses with Prometheus's own parser, and every series an
// expression reads is served, with the labels it queries, by the sample
// operator after a workload on a real control plane. promtool's checks and
// unit tests of the rules run from 'make test' (the promtool target).
package monitoring_test

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
	testenv.Main(m, testenv.Options{CRDDirs: []string{"../crd/bases"}}, func(e *testenv.Environment) { env = e })
}
