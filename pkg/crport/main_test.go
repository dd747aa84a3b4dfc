package crport_test

import (
	"testing"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, func(e *testenv.Environment) { env = e })
}
