package testenv

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfig returns a kubeconfig file's contents for cfg: its host, CA,
// and client certificate or bearer token.
func kubeconfig(cfg *rest.Config) ([]byte, error) {
	const name = "opkit-testenv"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("write kubeconfig: %w", err)
	}
	return data, nil
}

// waitForDefaultNamespace waits until the API server's bootstrap has made
// the default namespace, which tests and samples create objects in.
func waitForDefaultNamespace(ctx context.Context, c kubernetes.Interface) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		// Until then, a NotFound or a refused connection: try again.
		_, err := c.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the default namespace: %w (last error: %w)", context.Cause(ctx), err)
		case <-tick.C:
		}
	}
}
