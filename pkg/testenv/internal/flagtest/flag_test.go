package flagtest

import (
	"flag"
	"testing"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// What a user's controller does in its main package or init.
var kubeconfig = flag.String("kubeconfig", "", "the user's own flag")

var _ = testenv.Main

func TestUsersKubeconfigFlagCoexistsWithTestenv(t *testing.T) {
	f := flag.CommandLine.Lookup("kubeconfig")
	if f == nil || f.Usage != "the user's own flag" || *kubeconfig != "" {
		t.Fatalf("-kubeconfig = %+v, want the user's flag", f)
	}
}
