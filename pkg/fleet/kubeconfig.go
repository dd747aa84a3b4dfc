package fleet

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// memberConfig returns the config of a member's kubeconfig, from its
// current context, refusing what would make the operator read its own
// files or run programs on the say of whoever wrote the kubeconfig (see
// KubeconfigSecrets).
func memberConfig(kubeconfig []byte) (*rest.Config, error) {
	if len(kubeconfig) == 0 {
		return nil, errors.New("parse the kubeconfig: it is empty")
	}
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("parse the kubeconfig: %w", err)
	}
	name := cfg.CurrentContext
	kctx, ok := cfg.Contexts[name]
	if !ok {
		return nil, fmt.Errorf("read the kubeconfig: its current context %q is not among its contexts: set current-context", name)
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("read the kubeconfig: context %q names cluster %q, which it does not hold", name, kctx.Cluster)
	}
	user, ok := cfg.AuthInfos[kctx.AuthInfo]
	if !ok && kctx.AuthInfo != "" {
		return nil, fmt.Errorf("read the kubeconfig: context %q names user %q, which it does not hold", name, kctx.AuthInfo)
	}
	if err := inline(cluster, user); err != nil {
		return nil, fmt.Errorf("refuse the kubeconfig: %w", err)
	}
	// Only the current context's entries: another's files are never read
	// either.
	only := clientcmdapi.NewConfig()
	only.CurrentContext = name
	only.Contexts[name] = kctx
	only.Clusters[kctx.Cluster] = cluster
	if user != nil {
		only.AuthInfos[kctx.AuthInfo] = user
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*only, name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("read the kubeconfig: %w", err)
	}
	return rc, nil
}

// inline returns an error naming the first of the cluster's and user's
// fields that reads a file or runs something.
func inline(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) error {
	switch {
	case c.Server == "":
		return errors.New("its cluster has no server")
	case c.CertificateAuthority != "":
		return errors.New("certificate-authority names a file: put the CA in certificate-authority-data")
	}
	if u == nil {
		return nil
	}
	switch {
	case u.Exec != nil:
		return errors.New("the user runs a command (exec): use a token or a client certificate inline")
	case u.AuthProvider != nil:
		return errors.New("the user calls an auth provider: use a token or a client certificate inline")
	case u.TokenFile != "":
		return errors.New("tokenFile names a file: put the token in token")
	case u.ClientCertificate != "":
		return errors.New("client-certificate names a file: put the certificate in client-certificate-data")
	case u.ClientKey != "":
		return errors.New("client-key names a file: put the key in client-key-data")
	}
	return nil
}
