package webhook_test

import (
	"testing"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		CRDDirs: []string{"testdata"},
		// The API server presents a client certificate to every admission
		// webhook; only TestClientAuth's server asks for it.
		Webhook: testenv.WebhookOptions{ClientAuth: true},
	}, func(e *testenv.Environment) { env = e })
}
