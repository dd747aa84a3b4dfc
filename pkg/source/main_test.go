package source_test

import (
	"flag"
	"os"
	"testing"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// env is the control plane of the integration tests (kind_test.go). The
// unit tests do not use it.
var env *testenv.Environment

func TestMain(m *testing.M) {
	if os.Getenv(loadEnv) != "" {
		spin()
	}
	// A run of benchmarks alone ('make bench' passes -run '^$') needs no
	// control plane, and one idling beside them is noise.
	flag.Parse()
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "^$" {
		os.Exit(m.Run())
	}
	testenv.Main(m, testenv.Options{}, func(e *testenv.Environment) { env = e })
}
