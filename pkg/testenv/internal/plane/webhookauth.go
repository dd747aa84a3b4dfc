package plane

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Files WriteWebhookClientAuth writes.
const (
	webhookClientCAFile    = "webhook-client-ca.crt"
	webhookKubeconfigFile  = "webhook-client.kubeconfig"
	admissionConfigFile    = "admission-configuration.json"
	webhookClientCertUser  = "kube-apiserver-webhook-client"
	webhookKubeconfigMatch = "*" // every webhook the API server calls
)

// WriteWebhookClientAuth writes into dir what makes kube-apiserver present
// a client certificate to the admission webhooks it calls: a new CA
// (caFile, for the webhook server to verify clients by), a kubeconfig
// whose user "*" holds a certificate that CA signed, and an
// AdmissionConfiguration (configFile, Options.AdmissionConfigFile) that
// gives that kubeconfig to the ValidatingAdmissionWebhook and
// MutatingAdmissionWebhook plugins. CRD conversion webhooks present no
// certificate whatever the configuration: the API server builds their
// clients with an empty kubeconfig (k8s.io/apiextensions-apiserver's
// pkg/apiserver/conversion/webhook_converter.go).
func WriteWebhookClientAuth(dir string) (caFile, configFile string, err error) {
	ca, err := newCA("opkit-testenv-webhook-clients")
	if err != nil {
		return "", "", fmt.Errorf("make webhook client CA: %w", err)
	}
	crt, key, err := ca.clientCert(webhookClientCertUser)
	if err != nil {
		return "", "", fmt.Errorf("make webhook client certificate: %w", err)
	}
	kc := clientcmdapi.NewConfig()
	kc.AuthInfos[webhookKubeconfigMatch] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	kubeconfig, err := clientcmd.Write(*kc)
	if err != nil {
		return "", "", fmt.Errorf("write webhook client kubeconfig: %w", err)
	}
	kubeconfigPath := filepath.Join(dir, webhookKubeconfigFile)
	webhookConfig := map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration",
		"kubeConfigFile": kubeconfigPath,
	}
	admission, err := json.Marshal(map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
		"plugins": []any{
			map[string]any{"name": "ValidatingAdmissionWebhook", "configuration": webhookConfig},
			map[string]any{"name": "MutatingAdmissionWebhook", "configuration": webhookConfig},
		},
	})
	if err != nil {
		return "", "", err
	}
	caFile, configFile = filepath.Join(dir, webhookClientCAFile), filepath.Join(dir, admissionConfigFile)
	for p, data := range map[string][]byte{caFile: ca.certPEM(), kubeconfigPath: kubeconfig, configFile: admission} {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return "", "", fmt.Errorf("write %s: %w", filepath.Base(p), err)
		}
	}
	return caFile, configFile, nil
}
