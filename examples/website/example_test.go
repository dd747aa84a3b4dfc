package website

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	examplev1 "github.com/opkit-dev/opkit/examples/website/api/v1"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// The operator's main: the manager, with a scheme that holds the
// Website, and the website controller.
func Example() {
	cfg, err := manager.Config("") // --kubeconfig, KUBECONFIG, in-cluster, ~/.kube/config
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := examplev1.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:         scheme,
		LeaderElection: manager.LeaderElectionOptions{Enabled: true, Name: "website-operator"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := SetupWebsite(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := mgr.Start(manager.SignalContext()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
