package manager

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config finds the cluster the way users expect: the kubeconfig file given
// (from a --kubeconfig flag, say), then the files in KUBECONFIG, then the
// pod's service account (in a cluster), then ~/.kube/config, each loaded by
// client-go's clientcmd rules. When none works, the error names every place
// it looked and why each failed.
//
// As controller-runtime's GetConfig does, it turns client-side rate limiting
// off (QPS -1) unless the kubeconfig sets a QPS: the API server's priority
// and fairness protects it, and client-go's default of 5 requests a second
// would throttle an operator's writes.
func Config(kubeconfig string) (*rest.Config, error) {
	cfg, err := findConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}
	return cfg, nil
}

func findConfig(kubeconfig string) (*rest.Config, error) {
	load := func(explicit string, precedence ...string) (*rest.Config, error) {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: explicit, Precedence: precedence}
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	}
	if kubeconfig != "" {
		cfg, err := load(kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load the kubeconfig %s given by --kubeconfig: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	looked := []string{"--kubeconfig: not given"}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		cfg, err := load("", strings.Split(env, string(os.PathListSeparator))...)
		if err == nil {
			return cfg, nil
		}
		looked = append(looked, fmt.Sprintf("KUBECONFIG=%s: %v", env, err))
	} else {
		looked = append(looked, "KUBECONFIG: not set")
	}
	cfg, err := rest.InClusterConfig()
	if err == nil {
		return cfg, nil
	}
	looked = append(looked, fmt.Sprintf("in-cluster service account: %v", err))
	if cfg, err = load(clientcmd.RecommendedHomeFile); err == nil {
		return cfg, nil
	}
	looked = append(looked, fmt.Sprintf("%s: %v", clientcmd.RecommendedHomeFile, err))
	return nil, fmt.Errorf("find the cluster: looked in %s. Pass --kubeconfig, set KUBECONFIG, or run in a pod", strings.Join(looked, "; "))
}
